package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// TestIndexByAnchorKeepsIndexedOperations migrates a database whose per-DID index is keyed by
// suffix (before migration 20) and finds every operation again, in order, through the queries
// that read the index.
func TestIndexByAnchorKeepsIndexedOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, i := migrationsAt(t, 20)

	s := migratedTo(t, ms[:i])

	old := []store.DIDOperation{
		{Suffix: "b", AnchorSeq: 1, Index: 0, Type: "create", Request: []byte(`{"b":0}`)},
		{Suffix: "a", AnchorSeq: 1, Index: 1, Type: "create", Request: []byte(`{"a":1}`)},
		{Suffix: "a", AnchorSeq: 2, Index: 0, Type: "update", Request: []byte(`{"a":2}`)},
	}
	indexedBefore(t, s, old)
	require.NoError(t, s.upgrade(ctx, ms))

	got, err := s.DIDOperationList(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{old[1], old[2]}, got)
	last, err := s.DIDLastAnchors(ctx, []string{"a", "b", "c"})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"a": 2, "b": 1}, last)

	// Indexing an anchor again (a second observer, a restart) adds nothing.
	require.NoError(t, s.DIDOperationInsertMany(ctx, old))
	got, err = s.DIDOperationList(ctx, "b")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{old[0]}, got)
}

// TestDIDStatesMigrationAsksForAFill: migration 29 creates did_states empty and, on a database
// whose index holds operations, the setting that has the daemon compute their states.
func TestDIDStatesMigrationAsksForAFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, i := migrationsAt(t, 29)

	for _, indexed := range []bool{false, true} {
		s := migratedTo(t, ms[:i])
		if indexed {
			indexedBefore(t, s, []store.DIDOperation{{Suffix: "a", AnchorSeq: 1, Type: "create", Request: []byte(`{}`)}})
		}
		require.NoError(t, s.upgrade(ctx, ms))
		v, err := s.SettingGet(ctx, store.DIDStateFillSetting)
		if !indexed {
			require.ErrorIs(t, err, store.ErrNotFound)
			continue
		}
		require.NoError(t, err)
		require.Empty(t, v, "nothing computed yet")
		_, err = s.DIDStateGet(ctx, "a")
		require.ErrorIs(t, err, store.ErrNotFound)
	}
}

// TestRowsIndexedBeforeKeepTheirRequests: rows an older anchord indexed with their requests are
// read with them, beside rows indexed now without theirs; nothing is rewritten.
func TestRowsIndexedBeforeKeepTheirRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, i := migrationsAt(t, 30)
	s := migratedTo(t, ms[:i])
	old := []store.DIDOperation{
		{Suffix: "a", AnchorSeq: 1, Index: 0, Type: "create", Request: []byte(`{"a":0}`)},
		{Suffix: "b", AnchorSeq: 1, Index: 1, Type: "create", Request: []byte(`{"b":1}`)},
	}
	indexedBefore(t, s, old)
	require.NoError(t, s.upgrade(ctx, ms))
	require.NoError(t, s.DIDOperationInsertMany(ctx, []store.DIDOperation{
		{Suffix: "a", AnchorSeq: 2, Index: 0, Type: "update", Request: []byte(`{"a":2}`)},
	}))
	got, err := s.DIDOperationList(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{old[0], {Suffix: "a", AnchorSeq: 2, Index: 0, Type: "update"}}, got)
	lists, err := s.DIDOperationLists(ctx, []string{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, got, lists["a"])
	require.Equal(t, []store.DIDOperation{old[1]}, lists["b"])
}

// TestSuffixIndexIsKeptOnlyWhereRowsNeedIt: a new database finds a DID's rows through its
// state, has no index by suffix and keeps its states by rowid; one that indexed operations
// before migration 30 keeps the index and reads through it (its older states name no
// positions), and states it stores from then on name theirs.
func TestSuffixIndexIsKeptOnlyWhereRowsNeedIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, i := migrationsAt(t, 30)
	hasIndex := func(s *Store) bool {
		var n int
		require.NoError(t, s.writer.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'did_operations_suffix'`).Scan(&n))
		return n == 1
	}
	statesByRowid := func(s *Store) bool {
		var keyed bool
		require.NoError(t, s.writer.QueryRowContext(ctx, qDIDStatesWithoutRowid).Scan(&keyed))
		return !keyed
	}

	fresh, err := Open(ctx, Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(fresh.Close)
	require.False(t, hasIndex(fresh), "a new database")
	require.True(t, statesByRowid(fresh))
	require.False(t, fresh.layout.bySuffix.Load())

	empty := migratedTo(t, ms[:i])
	require.True(t, hasIndex(empty))
	require.NoError(t, empty.upgrade(ctx, ms))
	require.False(t, hasIndex(empty), "an older database that indexed nothing")
	require.True(t, statesByRowid(empty))
	require.False(t, empty.layout.bySuffix.Load())

	s := migratedTo(t, ms[:i])
	old := []store.DIDOperation{{Suffix: "a", AnchorSeq: 1, Index: 0, Type: "create", Request: []byte(`{"a":0}`)}}
	indexedBefore(t, s, old)
	_, err = s.writer.ExecContext(ctx, `INSERT INTO did_states (suffix, state) VALUES ('a', x'01')`)
	require.NoError(t, err)
	require.NoError(t, s.upgrade(ctx, ms))
	require.True(t, hasIndex(s), "an older database with operations")
	require.False(t, statesByRowid(s), "nothing is rewritten")
	require.True(t, s.layout.bySuffix.Load())
	got, err := s.DIDOperationList(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, old, got, "found by the suffix index: the state names no positions")

	next := store.DIDOperation{Suffix: "a", AnchorSeq: 2, Index: 5, Type: "update"}
	require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.DIDOperationInsertMany(ctx, []store.DIDOperation{next}); err != nil {
			return err
		}
		return tx.DIDStatePutMany(ctx, []store.DIDState{{Suffix: "a", State: []byte{2}, Positions: []store.DIDPosition{{AnchorSeq: 1}, {AnchorSeq: 2, Index: 5}}}})
	}))
	var positions []byte
	require.NoError(t, s.writer.QueryRowContext(ctx, `SELECT positions FROM did_states WHERE suffix = 'a'`).Scan(&positions))
	decoded, err := store.DecodePositions(positions)
	require.NoError(t, err)
	require.Equal(t, []store.DIDPosition{{AnchorSeq: 1}, {AnchorSeq: 2, Index: 5}}, decoded)
	got, err = s.DIDOperationList(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{old[0], next}, got)
}

// TestCASPutGivesOldContentItsDigest: content stored before migration 27 kept no sha2-256
// digest; stored again (another domain's batch names the file by hash), it is found by it.
func TestCASPutGivesOldContentItsDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, i := migrationsAt(t, 27)
	s := migratedTo(t, ms[:i])
	data := []byte("a batch file stored before digests were kept")
	_, err := s.writer.ExecContext(ctx, `INSERT INTO cas_objects (cid, data, size, created_at) VALUES (?, ?, ?, 0)`, "QmOld", data, len(data))
	require.NoError(t, err)
	require.NoError(t, s.upgrade(ctx, ms))
	sum := sha256.Sum256(data)
	_, err = s.CASGetBySHA256(ctx, sum[:])
	require.ErrorIs(t, err, store.ErrNotFound, "stored before the digest was kept")
	require.NoError(t, s.CASPut(ctx, "QmOld", data))
	got, err := s.CASGetBySHA256(ctx, sum[:])
	require.NoError(t, err)
	require.Equal(t, data, got)
}

// indexedBefore writes index rows with their requests, as an anchord before the index stopped
// keeping them did, at any schema version.
func indexedBefore(t *testing.T, s *Store, ops []store.DIDOperation) {
	t.Helper()
	for _, op := range ops {
		_, err := s.writer.ExecContext(context.Background(), `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request) VALUES (?, ?, ?, ?, ?)`,
			op.Suffix, op.AnchorSeq, op.Index, op.Type, op.Request)
		require.NoError(t, err)
	}
}

// migrationsAt returns every migration and the index of version v among them.
func migrationsAt(t *testing.T, v int) ([]store.Migration, int) {
	t.Helper()
	ms, err := Migrations()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m store.Migration) bool { return m.Version == v })
	require.Positive(t, i, "migration %d exists", v)
	return ms, i
}

// migratedTo opens a new database with only the migrations ms applied, as an older anchord left
// it; the test applies the rest.
func migratedTo(t *testing.T, ms []store.Migration) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	writer, err := sql.Open("sqlite", dsn(path, false, SynchronousDefault, MmapSizeDefault, writerCacheSize, false))
	require.NoError(t, err)
	writer.SetMaxOpenConns(1)
	reader, err := sql.Open("sqlite", dsn(path, false, SynchronousDefault, MmapSizeDefault, writerCacheSize, false))
	require.NoError(t, err)
	s := &Store{writer: writer, reader: reader, path: path, logger: slog.New(slog.DiscardHandler)}
	s.executor = executor{w: writer, r: reader}
	t.Cleanup(s.Close)
	require.NoError(t, s.applyMigrations(context.Background(), ms))
	return s
}

// TestStoreRefusesANewerSchema: a database that records a migration this binary does not know
// (applied by a newer anchord) is not opened.
func TestStoreRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Config{DataDir: dir})
	require.NoError(t, err)
	_, err = s.writer.ExecContext(ctx, qMigrationInsert, 9999, "from_the_future", time.Now().UnixMicro())
	require.NoError(t, err)
	s.Close()

	_, err = Open(ctx, Config{DataDir: dir})
	require.ErrorIs(t, err, store.ErrSchemaNewer)
	require.ErrorContains(t, err, "9999_from_the_future")
}
