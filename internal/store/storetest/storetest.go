// Package storetest is the store contract's conformance suite (Exercise) and the helpers every
// test that needs a real database uses: a temporary SQLite directory, a fresh PostgreSQL schema
// per test (dropped at cleanup), and Each, which runs a test on both backends.
//
// Unlike domain packages, storetest imports the backends: it is the one place that knows how to
// build each for a test, as river's riverdbtest does. Backend tests that call Exercise therefore
// live in external test packages (pgstore_test, sqlitestore_test) to avoid an import cycle.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// Opener opens (or reopens) the same database each time it is called.
type Opener func(ctx context.Context) (store.Store, error)

// SQLiteOpener returns an opener for a fresh SQLite database in a temporary directory.
func SQLiteOpener(t testing.TB) Opener {
	t.Helper()
	dir := t.TempDir()
	return func(ctx context.Context) (store.Store, error) {
		return sqlitestore.Open(ctx, sqlitestore.Config{DataDir: dir, Logger: anchordtest.Logger(t)})
	}
}

// PostgresOpener returns an opener for a fresh PostgreSQL schema; it skips (or fails, under
// ANCHORD_TEST_REQUIRE_SERVICES) when no test database is configured.
func PostgresOpener(t testing.TB) Opener {
	t.Helper()
	u := PostgresURL(t)
	return func(ctx context.Context) (store.Store, error) {
		return pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 8, Logger: anchordtest.Logger(t)})
	}
}

// PostgresURL creates a schema of its own for the test in the test database and returns a URL
// whose connections use it; the schema is dropped when the test ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := anchordtest.DatabaseURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err, "connect to %s", anchordtest.EnvDatabaseURL)
	defer conn.Close(ctx)

	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "anchordtest_" + hex.EncodeToString(b[:])
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})

	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens a store from opener and closes it when the test ends.
func Open(t testing.TB, opener Opener) store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := opener(ctx)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// Backends lists the backends a test can run on, by name.
var Backends = []string{"sqlite", "postgres"}

// OpenerFor returns the opener of a backend by name.
func OpenerFor(t testing.TB, backend string) Opener {
	t.Helper()
	switch backend {
	case "sqlite":
		return SQLiteOpener(t)
	case "postgres":
		return PostgresOpener(t)
	}
	t.Fatalf("unknown backend %q", backend)
	return nil
}

// Each runs fn as a parallel subtest on every backend, with a fresh database each.
func Each(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, OpenerFor(t, b)))
		})
	}
}

// NewRegistry returns a fresh Prometheus registry, for tests that check metrics registration.
func NewRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

func randomName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s", prefix, hex.EncodeToString(b[:]))
}
