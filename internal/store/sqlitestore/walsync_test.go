package sqlitestore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// TestInTxSyncsOutsideTheWriteLock: with synchronous=full, transactions commit without syncing
// and share fdatasyncs of the WAL made after the lock is released; every committed write is
// there, the writer connection is back at synchronous=FULL between transactions (its writes
// outside InTx sync at commit as before).
func TestInTxSyncsOutsideTheWriteLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	s, err := Open(ctx, Config{DataDir: t.TempDir(), Registerer: reg})
	require.NoError(t, err)
	defer s.Close()
	require.NotNil(t, s.wal)
	syncs0, waits0 := testutil.ToFloat64(s.wal.syncs), testutil.ToFloat64(s.wal.waits) // the migrations'

	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					return tx.SettingPut(ctx, fmt.Sprintf("w%d-%d", w, i), []byte("v"))
				})
				if err != nil {
					t.Errorf("InTx: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	for w := range writers {
		for i := range each {
			v, err := s.SettingGet(ctx, fmt.Sprintf("w%d-%d", w, i))
			require.NoError(t, err)
			require.Equal(t, []byte("v"), v)
		}
	}
	var mode int
	require.NoError(t, s.writer.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode))
	require.Equal(t, 2, mode, "the writer is back at FULL between transactions")

	syncs := testutil.ToFloat64(s.wal.syncs) - syncs0
	waits := testutil.ToFloat64(s.wal.waits) - waits0
	require.InDelta(t, float64(writers*each), waits, 0.5, "every transaction waited for a sync")
	require.Positive(t, syncs)
	require.LessOrEqual(t, syncs, waits)
	t.Logf("%d transactions from %d goroutines, %.0f fdatasyncs", writers*each, writers, syncs)
	n, err := testutil.GatherAndCount(reg, "anchord_sqlite_wal_syncs_total")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TestInTxWithSynchronousNormalDoesNotSync: with synchronous=normal nothing syncs at commit, as
// before.
func TestInTxWithSynchronousNormalDoesNotSync(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), Config{DataDir: t.TempDir(), Synchronous: "normal"})
	require.NoError(t, err)
	defer s.Close()
	require.Nil(t, s.wal)
	require.NoError(t, s.InTx(context.Background(), func(ctx context.Context, tx store.Executor) error {
		return tx.SettingPut(ctx, "a", []byte("b"))
	}))
}
