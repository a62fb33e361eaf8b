// Package pgstore is the PostgreSQL backend of the store contract, through pgx v5 and its pool.
// It is selected by --database-url and shared by every instance of a cluster.
//
// All coordination times come from PostgreSQL's clock (now() in the statements themselves), so
// hosts with skewed clocks still agree on lease and claim expiry. Migrations run under a
// transaction-scoped advisory lock keyed by the current schema, so instances starting together
// apply each migration once.
package pgstore

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// MaxConnsDefault bounds the pool when Config.MaxConns is zero.
const MaxConnsDefault = 16

// Config configures Open.
type Config struct {
	URL      string
	MaxConns int
	// MaintainInterval, when positive, is the period of a Maintainer (the daemon passes
	// MaintainIntervalDefault); Run must run for it to do anything.
	MaintainInterval time.Duration
	Logger           *slog.Logger
	// Registerer receives the pool metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Store is the PostgreSQL backend.
type Store struct {
	executor
	pool       *pgxpool.Pool
	logger     *slog.Logger
	maintainer *Maintainer // nil without Config.MaintainInterval
}

var _ store.Store = (*Store)(nil)

// ErrPermanent marks an Open failure that retrying cannot fix: the database does not exist, or
// the server refused the credentials.
var ErrPermanent = errors.New("postgres refuses this configuration")

// permanentCodes are the SQLSTATEs of such failures, with what the operator should do.
var permanentCodes = map[string]string{
	"3D000": "the database does not exist; create it (createdb <name>) or name another in --database-url",
	"28P01": "password authentication failed; check the user and password in --database-url",
	"28000": "the server refused this user (pg_hba.conf); check the user in --database-url",
}

// Open connects and applies pending migrations. It fails if the database cannot be reached;
// the caller decides whether to retry, except for ErrPermanent failures.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: parse URL: %w", err)
	}
	pcfg.MaxConns = int32(cmp.Or(cfg.MaxConns, MaxConnsDefault))
	// A dead server must be noticed quickly by health checks and callers, not after the OS
	// TCP timeout.
	pcfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pcfg.HealthCheckPeriod = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s := &Store{executor: executor{q: pool}, pool: pool, logger: logger}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			if hint, ok := permanentCodes[pe.Code]; ok {
				return nil, fmt.Errorf("%w: %s (SQLSTATE %s: %s)", ErrPermanent, hint, pe.Code, pe.Message)
			}
		}
		return nil, err
	}
	if s.bySuffix, err = readIndexLayout(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(newPoolCollector(pool)); err != nil {
			pool.Close()
			return nil, fmt.Errorf("register postgres pool metrics: %w", err)
		}
	}
	if cfg.MaintainInterval > 0 {
		if s.maintainer, err = newMaintainer(pool, cfg.MaintainInterval, logger, cfg.Registerer); err != nil {
			pool.Close()
			return nil, fmt.Errorf("open postgres store: %w", err)
		}
	}
	return s, nil
}

// Backend implements store.Store.
func (s *Store) Backend() string { return "postgres" }

// Ping implements store.Store. It runs a query rather than pool.Ping so that a server that
// accepts connections but cannot serve them is reported too.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping postgres: %w", err)
	}
	return nil
}

// Close implements store.Store.
func (s *Store) Close() { s.pool.Close() }

// InTx implements store.Store.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	hctx, hooks := store.BeginCommitHooks(ctx)
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(hctx, executor{q: tx, bySuffix: s.bySuffix})
	}); err != nil {
		return err
	}
	hooks.Run()
	return nil
}

// querier is what *pgxpool.Pool and pgx.Tx have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

type executor struct {
	q querier
	// bySuffix: the per-DID index is read through did_operations' key by suffix, in a database
	// that indexed operations before migration 30 (didposition.go).
	bySuffix bool
}

// Now implements store.Executor.
func (e executor) Now(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := e.q.QueryRow(ctx, qNow).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t.UTC(), nil
}

// interpretError maps PostgreSQL errors to the contract's sentinels.
func interpretError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" { // unique_violation
		return fmt.Errorf("%w: %s", store.ErrConflict, pe.Message)
	}
	return err
}
