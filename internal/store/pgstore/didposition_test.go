package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/storetest"
)

// operationKey names the columns of did_operations' primary key, in order.
func operationKey(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT a.attname FROM pg_constraint c
		CROSS JOIN unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
		WHERE c.conrelid = 'did_operations'::regclass AND c.contype = 'p' ORDER BY k.n`)
	require.NoError(t, err)
	key, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return key
}

// TestNewDatabaseKeysOperationsByPosition: a new database keys did_operations by (anchor,
// index) and its rows keep no suffix; a DID's operations, its anchors and the DIDs themselves
// are read through the states, and reads give the suffix back.
func TestNewDatabaseKeysOperationsByPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := storetest.PostgresURL(t)
	s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	defer s.Close()
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	require.Equal(t, []string{"anchor_seq", "op_index"}, operationKey(t, conn))

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
	var kept int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM did_operations WHERE suffix <> ''`).Scan(&kept))
	require.Zero(t, kept, "no row keeps its suffix")

	got, err := s.DIDOperationList(ctx, "EiB")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{ops[0], ops[2]}, got)
	lists, err := s.DIDOperationLists(ctx, []string{"EiA", "EiB", "EiZ"})
	require.NoError(t, err)
	require.Equal(t, map[string][]store.DIDOperation{"EiA": {ops[1]}, "EiB": {ops[0], ops[2]}}, lists)
	last, err := s.DIDLastAnchors(ctx, []string{"EiA", "EiB", "EiZ"})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"EiA": 1, "EiB": 2}, last)
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

	// A state that names a row the index lacks is reported, not read as a shorter history.
	require.NoError(t, s.DIDStatePutMany(ctx, []store.DIDState{
		{Suffix: "EiA", State: []byte{1}, Positions: []store.DIDPosition{{AnchorSeq: 1, Index: 1}, {AnchorSeq: 9, Index: 0}}},
	}))
	_, err = s.DIDOperationList(ctx, "EiA")
	require.ErrorContains(t, err, "have no row")
}

// TestOlderDatabaseKeepsItsKeyBySuffix: a database whose index held operations before migration
// 30 keeps did_operations keyed by suffix, and its rows are still found by it (its older states
// name no positions); what the store writes now names positions too.
func TestOlderDatabaseKeepsItsKeyBySuffix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := storetest.PostgresURL(t)
	require.NoError(t, pgstore.MigrateBefore(ctx, u, 30))
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	_, err = conn.Exec(ctx, `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request) VALUES ('EiA', 1, 0, 'create', '')`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO did_states (suffix, state) VALUES ('EiA', '\x01')`)
	require.NoError(t, err)

	s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, []string{"suffix", "anchor_seq", "op_index"}, operationKey(t, conn))

	update := store.DIDOperation{Suffix: "EiA", AnchorSeq: 2, Index: 3, Type: "update"}
	require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.DIDOperationInsertMany(ctx, []store.DIDOperation{update}); err != nil {
			return err
		}
		// The state of an older database's DID names only the positions the observer knows.
		return tx.DIDStatePutMany(ctx, []store.DIDState{{Suffix: "EiA", State: []byte{2}, Positions: []store.DIDPosition{{AnchorSeq: 2, Index: 3}}}})
	}))
	got, err := s.DIDOperationList(ctx, "EiA")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{{Suffix: "EiA", AnchorSeq: 1, Index: 0, Type: "create"}, update}, got,
		"both rows, through the key by suffix")
	var suffix string
	require.NoError(t, conn.QueryRow(ctx, `SELECT suffix FROM did_operations WHERE anchor_seq = 2`).Scan(&suffix))
	require.Equal(t, "EiA", suffix, "rows keep their suffix where reads find them by it")
	var positions []byte
	require.NoError(t, conn.QueryRow(ctx, `SELECT positions FROM did_states WHERE suffix = 'EiA'`).Scan(&positions))
	pos, err := store.DecodePositions(positions)
	require.NoError(t, err)
	require.Equal(t, []store.DIDPosition{{AnchorSeq: 2, Index: 3}}, pos)
}
