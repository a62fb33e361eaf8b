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
