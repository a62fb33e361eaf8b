package sqlitestore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	ms, err := sqlitestore.Migrations()
	require.NoError(t, err)
	storetest.Exercise(t, storetest.SQLiteOpener, ms)
}

func TestOpenCreatesDataDirInWALMode(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	reg := prometheus.NewRegistry()
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: dir, Registerer: reg})
	require.NoError(t, err)
	defer s.Close()
	_, err = os.Stat(filepath.Join(dir, sqlitestore.FileName))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, sqlitestore.FileName+"-wal"))
	require.NoError(t, err, "WAL journal in use")
	n, err := testutil.GatherAndCount(reg, "anchord_db_pool_max_connections")
	require.NoError(t, err)
	require.Equal(t, 2, n, "writer and reader pools")
}

func TestOpenRejectsEmptyDir(t *testing.T) {
	t.Parallel()
	_, err := sqlitestore.Open(context.Background(), sqlitestore.Config{})
	require.ErrorContains(t, err, "data directory")
}

func TestOpenKeepsTheDataPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	// A data directory and database left readable by an older version are tightened.
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, sqlitestore.FileName), nil, 0o644))
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: dir})
	require.NoError(t, err)
	defer s.Close()
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	for _, f := range []string{sqlitestore.FileName, sqlitestore.FileName + "-wal", sqlitestore.FileName + "-shm"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), f)
	}
}
