package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
)

// AnalyzeIntervalDefault is how often the daemon's Analyzer looks for tables whose statistics
// are out of date (Config.AnalyzeInterval).
const AnalyzeIntervalDefault = 10 * time.Second

// Analyzer keeps the planner's statistics of this schema's tables current: every interval it
// ANALYZEs each table whose rows changed since its last analysis by more than autovacuum's
// default threshold (50 rows plus 10 % of the table).
//
// PostgreSQL's autovacuum does the same, when it is on. When it is off (as on a server set up
// for tests, and on some managed ones), tables that grew from nothing keep the statistics of an
// empty table, and the planner guesses: with a million DIDs indexed and no statistics, the
// resolution query became a bitmap scan, two sorts and a merge join with a scan of every
// anchor, instead of two index lookups, and one instance resolved 9,237–9,672 GET/s instead of
// 11,671–11,737. Where autovacuum runs, it resets the same counters, and this finds nothing to
// do.
//
// Instances of a cluster share the schema: a round runs under a transaction-scoped advisory
// lock, and an instance that cannot take it leaves the round to the one that holds it. ANALYZE
// takes a lock that blocks neither reads nor writes, only other maintenance of the same table.
type Analyzer struct {
	pool     *pgxpool.Pool
	interval time.Duration
	logger   *slog.Logger
	analyzed *prometheus.CounterVec
}

// Analyzer returns the Store's Analyzer, or nil when Config.AnalyzeInterval was zero.
func (s *Store) Analyzer() *Analyzer { return s.analyzer }

func newAnalyzer(pool *pgxpool.Pool, interval time.Duration, logger *slog.Logger, reg prometheus.Registerer) (*Analyzer, error) {
	a := &Analyzer{
		pool: pool, interval: interval, logger: logger,
		analyzed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_postgres_analyze_total",
			Help: "Tables ANALYZEd because their rows changed by more than autovacuum's default threshold since their last analysis.",
		}, []string{"table"}),
	}
	if reg != nil {
		if err := reg.Register(a.analyzed); err != nil {
			return nil, fmt.Errorf("register analyze metrics: %w", err)
		}
	}
	return a, nil
}

// Run analyzes every interval until ctx is done. A failed round is logged and retried at the
// next tick: queries do not depend on it, only their plans do.
func (a *Analyzer) Run(ctx context.Context) error {
	loop.Every(ctx, a.interval, func(ctx context.Context) {
		if _, err := a.runOnce(ctx); err != nil && ctx.Err() == nil {
			a.logger.WarnContext(ctx, "analyze tables", "error", err)
		}
	})
	return nil
}

const (
	qAnalyzeLock = `SELECT pg_try_advisory_xact_lock(hashtext('anchord_analyze:' || current_schema()))`
	// The threshold is autovacuum's default (autovacuum_analyze_threshold 50,
	// autovacuum_analyze_scale_factor 0.1), on the live rows the statistics system counts.
	qAnalyzeStale = `SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND n_mod_since_analyze > 50 + 0.1 * n_live_tup
		ORDER BY relname`
)

// runOnce analyzes the tables that need it and returns their names; none when another instance
// holds the round.
func (a *Analyzer) runOnce(ctx context.Context) ([]string, error) {
	var done []string
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		var mine bool
		if err := tx.QueryRow(ctx, qAnalyzeLock).Scan(&mine); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if !mine {
			return nil
		}
		rows, err := tx.Query(ctx, qAnalyzeStale)
		if err != nil {
			return fmt.Errorf("find stale statistics: %w", err)
		}
		stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("find stale statistics: %w", err)
		}
		for _, t := range stale {
			start := time.Now()
			if _, err := tx.Exec(ctx, "ANALYZE "+pgx.Identifier{t}.Sanitize()); err != nil {
				return fmt.Errorf("analyze %s: %w", t, err)
			}
			a.analyzed.WithLabelValues(t).Inc()
			a.logger.DebugContext(ctx, "table analyzed", "table", t, "took", time.Since(start))
			done = append(done, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}
