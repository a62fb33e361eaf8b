package sqlitestore

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// TestIndexByAnchorKeepsIndexedOperations migrates a database whose per-DID index is keyed by
// suffix (before migration 20) and finds every operation again, in order, through the queries
// that read the index.
func TestIndexByAnchorKeepsIndexedOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ms, err := Migrations()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m store.Migration) bool { return m.Version == 20 })
	require.Positive(t, i, "migration 20 exists")

	s := migratedTo(t, ms[:i])

	old := []store.DIDOperation{
		{Suffix: "b", AnchorSeq: 1, Index: 0, Type: "create", Request: []byte(`{"b":0}`)},
		{Suffix: "a", AnchorSeq: 1, Index: 1, Type: "create", Request: []byte(`{"a":1}`)},
		{Suffix: "a", AnchorSeq: 2, Index: 0, Type: "update", Request: []byte(`{"a":2}`)},
	}
	require.NoError(t, s.DIDOperationInsertMany(ctx, old))
	require.NoError(t, s.applyMigrations(ctx, ms))

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
	ms, err := Migrations()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m store.Migration) bool { return m.Version == 29 })
	require.Positive(t, i, "migration 29 exists")

	for _, indexed := range []bool{false, true} {
		s := migratedTo(t, ms[:i])
		if indexed {
			require.NoError(t, s.DIDOperationInsertMany(ctx, []store.DIDOperation{{Suffix: "a", AnchorSeq: 1, Type: "create", Request: []byte(`{}`)}}))
		}
		require.NoError(t, s.applyMigrations(ctx, ms))
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

// migratedTo opens a new database with only the migrations ms applied, as an older anchord left
// it; the test applies the rest.
func migratedTo(t *testing.T, ms []store.Migration) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	writer, err := sql.Open("sqlite", dsn(path, false, SynchronousDefault, MmapSizeDefault, false))
	require.NoError(t, err)
	writer.SetMaxOpenConns(1)
	reader, err := sql.Open("sqlite", dsn(path, false, SynchronousDefault, MmapSizeDefault, false))
	require.NoError(t, err)
	s := &Store{writer: writer, reader: reader, path: path, logger: slog.New(slog.DiscardHandler)}
	s.executor = executor{w: writer, r: reader}
	t.Cleanup(s.Close)
	require.NoError(t, s.applyMigrations(context.Background(), ms))
	return s
}
