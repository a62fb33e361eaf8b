package pgstore_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
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

// TestDIDStatesMigrationAsksForAFill: migration 29, applied to a database whose index holds
// operations, creates did_states empty and the setting that has the daemon compute their states.
func TestDIDStatesMigrationAsksForAFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := storetest.PostgresURL(t)
	s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	_, err = s.SettingGet(ctx, store.DIDStateFillSetting)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing was indexed")
	require.NoError(t, s.DIDOperationInsertMany(ctx, []store.DIDOperation{{Suffix: "a", AnchorSeq: 1, Type: "create", Request: []byte(`{}`)}}))
	s.Close()

	// Back to before migration 29, with an operation indexed.
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `DROP TABLE did_states; DELETE FROM schema_migrations WHERE version = 29`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	s, err = pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	defer s.Close()
	v, err := s.SettingGet(ctx, store.DIDStateFillSetting)
	require.NoError(t, err)
	require.Empty(t, v, "nothing computed yet")
	_, err = s.DIDStateGet(ctx, "a")
	require.ErrorIs(t, err, store.ErrNotFound)
}
