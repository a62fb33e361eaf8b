package pgstore_test

import (
	"context"
	"crypto/sha256"
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

// TestRowsIndexedBeforeKeepTheirRequests: rows an older anchord indexed with their requests are
// read with them, beside rows indexed now without theirs; nothing is rewritten. Content stored
// before its digest was kept gets it when stored again.
func TestRowsIndexedBeforeKeepTheirRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := storetest.PostgresURL(t)
	// An index of an anchord from before the positions (migration 30), which kept requests.
	require.NoError(t, pgstore.MigrateBefore(ctx, u, 30))
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close(ctx)) }()
	_, err = conn.Exec(ctx, `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request) VALUES ('a', 1, 0, 'create', '{"a":0}')`)
	require.NoError(t, err)
	s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.DIDOperationInsertMany(ctx, []store.DIDOperation{
		{Suffix: "a", AnchorSeq: 2, Index: 0, Type: "update", Request: []byte(`{"a":2}`)},
	}))
	want := []store.DIDOperation{
		{Suffix: "a", AnchorSeq: 1, Index: 0, Type: "create", Request: []byte(`{"a":0}`)},
		{Suffix: "a", AnchorSeq: 2, Index: 0, Type: "update"},
	}
	got, err := s.DIDOperationList(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, want, got)
	lists, err := s.DIDOperationLists(ctx, []string{"a"})
	require.NoError(t, err)
	require.Equal(t, want, lists["a"])

	data := []byte("a batch file stored before digests were kept")
	_, err = conn.Exec(ctx, `INSERT INTO cas_objects (cid, data, size) VALUES ('QmOld', $1, $2)`, data, len(data))
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	_, err = s.CASGetBySHA256(ctx, sum[:])
	require.ErrorIs(t, err, store.ErrNotFound, "stored without its digest")
	require.NoError(t, s.CASPut(ctx, "QmOld", data))
	gotData, err := s.CASGetBySHA256(ctx, sum[:])
	require.NoError(t, err)
	require.Equal(t, data, gotData)
}

// TestStoreRefusesANewerSchema: a schema that records a migration this binary does not know
// (applied by a newer anchord) is not opened.
func TestStoreRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := storetest.PostgresURL(t)
	s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	s.Close()
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (9999, 'from_the_future')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	_, err = pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.ErrorIs(t, err, store.ErrSchemaNewer)
	require.ErrorContains(t, err, "9999_from_the_future")
}
