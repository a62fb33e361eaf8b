package pgstore_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	ms, err := pgstore.Migrations()
	require.NoError(t, err)
	storetest.Exercise(t, storetest.PostgresOpener, ms)
}

func TestPoolMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: storetest.PostgresURL(t), MaxConns: 3, Registerer: reg})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, testutil.GatherAndCompare(reg, stringsReader(`
# HELP anchord_db_pool_max_connections Maximum open connections.
# TYPE anchord_db_pool_max_connections gauge
anchord_db_pool_max_connections{backend="postgres"} 3
`), "anchord_db_pool_max_connections"))
}

func TestOpenFailsOnUnreachableServer(t *testing.T) {
	t.Parallel()
	_, err := pgstore.Open(context.Background(), pgstore.Config{URL: "postgres://postgres@127.0.0.1:1/none?connect_timeout=2"})
	require.Error(t, err)
}

// TestOpenRefusedDatabaseIsPermanent: a server that answers but has no such database is a
// permanent failure, which the daemon reports at once instead of waiting.
func TestOpenRefusedDatabaseIsPermanent(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(anchordtest.DatabaseURL(t))
	require.NoError(t, err)
	u.Path = "/anchord_no_such_database"
	_, err = pgstore.Open(context.Background(), pgstore.Config{URL: u.String()})
	require.ErrorIs(t, err, pgstore.ErrPermanent)
	require.ErrorContains(t, err, "does not exist")

	_, err = pgstore.Open(context.Background(), pgstore.Config{URL: "postgres://postgres@127.0.0.1:1/none?connect_timeout=2"})
	require.Error(t, err)
	require.NotErrorIs(t, err, pgstore.ErrPermanent, "a server that does not answer may yet")
}
