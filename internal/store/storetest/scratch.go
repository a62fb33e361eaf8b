package storetest

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// Scratch is a fresh, migrated database of one backend plus a direct connection to it, for
// tests that need tables of their own (the expiry service's generic registration) or must
// arrange rows the contract cannot write.
type Scratch struct {
	Store store.Store
	// Exec runs one statement on the database outside the store and returns the rows it
	// affected. Its text is the backend's own dialect ($1 on PostgreSQL, ? on SQLite).
	Exec func(ctx context.Context, sql string, args ...any) (int64, error)
	// URL is the database of a postgres Scratch (its schema included), to open it again.
	URL string
}

// OpenScratch opens a Scratch on backend ("sqlite" or "postgres"); everything is closed when
// the test ends.
func OpenScratch(t testing.TB, backend string) Scratch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch backend {
	case "sqlite":
		s, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: t.TempDir(), Logger: anchordtest.Logger(t)})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(10000)")
		raw, err := sql.Open("sqlite", "file:"+s.Path()+"?"+q.Encode())
		require.NoError(t, err)
		t.Cleanup(func() { _ = raw.Close() })
		return Scratch{Store: s, Exec: func(ctx context.Context, query string, args ...any) (int64, error) {
			res, err := raw.ExecContext(ctx, query, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		}}
	case "postgres":
		u := PostgresURL(t)
		s, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 8, Logger: anchordtest.Logger(t)})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		pool, err := pgxpool.New(ctx, u)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		return Scratch{Store: s, Exec: func(ctx context.Context, query string, args ...any) (int64, error) {
			tag, err := pool.Exec(ctx, query, args...)
			if err != nil {
				return 0, err
			}
			return tag.RowsAffected(), nil
		}, URL: u}
	}
	t.Fatalf("unknown backend %q", backend)
	return Scratch{}
}
