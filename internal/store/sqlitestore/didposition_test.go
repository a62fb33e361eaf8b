package sqlitestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// TestSwitchWaitsForSuffixReads: the switch to positions returns only once the reads that chose
// the suffix index are done, and every read that starts after it goes by positions.
func TestSwitchWaitsForSuffixReads(t *testing.T) {
	t.Parallel()
	l := new(indexLayout)
	l.bySuffix.Store(true)
	require.True(t, l.enterSuffixRead())
	switched := make(chan error)
	go func() { switched <- l.stopSuffixReads(context.Background()) }()
	select {
	case <-switched:
		t.Fatal("switched while a read went through the suffix index")
	case <-time.After(50 * time.Millisecond):
	}
	require.False(t, l.enterSuffixRead(), "a read that starts after the switch")
	l.leaveSuffixRead()
	require.NoError(t, <-switched)
	require.False(t, (*indexLayout)(nil).enterSuffixRead(), "an executor of no store")
}

// TestNewDatabaseKeepsNoSuffixInOperationRows: a new database writes its operations' rows
// without their DID's suffix (its state names their positions), reads give the suffix back, and
// the DIDs are listed through their states, each once, in suffix order.
func TestNewDatabaseKeepsNoSuffixInOperationRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openDir(t, t.TempDir())
	ops := []store.DIDOperation{
		{Suffix: "EiB", AnchorSeq: 1, Index: 0, Type: "create"},
		{Suffix: "EiA", AnchorSeq: 1, Index: 1, Type: "create"},
		{Suffix: "EiB", AnchorSeq: 2, Index: 0, Type: "update"},
	}
	require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.DIDOperationInsertMany(ctx, ops); err != nil {
			return err
		}
		_, err := tx.DIDStateInsertMany(ctx, []store.DIDState{
			{Suffix: "EiA", State: []byte{1}, Positions: []store.DIDPosition{{AnchorSeq: 1, Index: 1}}},
			{Suffix: "EiB", State: []byte{2}, Positions: []store.DIDPosition{{AnchorSeq: 1, Index: 0}, {AnchorSeq: 2, Index: 0}}},
		})
		return err
	}))
	require.Equal(t, map[string]string{"1/0": "", "1/1": "", "2/0": ""}, rowSuffixes(t, s, "1/0", "1/1", "2/0"))

	got, err := s.DIDOperationList(ctx, "EiB")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{ops[0], ops[2]}, got)

	var listed []string
	for after := ""; ; {
		page, next, err := s.DIDSuffixList(ctx, after, 1)
		require.NoError(t, err)
		if len(page) == 0 {
			require.Equal(t, after, next)
			break
		}
		listed, after = append(listed, page...), next
	}
	require.Equal(t, []string{"EiA", "EiB"}, listed)
}
