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

// MaintainIntervalDefault is how often the daemon's Maintainer looks for tables whose statistics
// are out of date or whose dead rows need vacuuming (Config.MaintainInterval).
const MaintainIntervalDefault = 10 * time.Second

// Maintainer does for this schema's tables what PostgreSQL's autovacuum does when it is on:
// every interval it ANALYZEs each table whose rows changed since its last analysis by more than
// autovacuum's default threshold (50 rows plus 10 % of the table), and VACUUMs each table whose
// dead rows passed autovacuum's default threshold for that (50 rows plus 20 %).
//
// When autovacuum is off (as on a server set up for tests, and on some managed ones), both go
// undone. Tables that grew from nothing keep the statistics of an empty table, and the planner
// guesses: with a million DIDs indexed and no statistics, the resolution query became a bitmap
// scan, two sorts and a merge join with a scan of every anchor, instead of two index lookups,
// and one instance resolved 9,237–9,672 GET/s instead of 11,671–11,737. And the queue, whose
// every row is inserted once and deleted once, keeps every deleted row: after 2.3 million
// creates through one instance `op_queue` held 2,328 live rows in 2.4 GB, its indexes hundreds of
// MB of dead entries that every claim and delete walked; vacuumed, the database was half the size
// and each million of that load 4-10 % faster. Where autovacuum runs, it resets the same
// counters, and this finds little to do.
//
// Instances of a cluster share the schema: a round runs under an advisory lock, and an instance
// that cannot take it leaves the round to the one that holds it. ANALYZE and VACUUM (without
// FULL) take a lock that blocks neither reads nor writes, only other maintenance of the same
// table; VACUUM skips a table whose lock another maintainer (autovacuum) holds.
//
// Each round also reads the size of the schema's indexes against PostgreSQL's shared buffers
// (buffers.go), in every instance: a read, and a warning an operator should see wherever it runs.
type Maintainer struct {
	pool     *pgxpool.Pool
	interval time.Duration
	logger   *slog.Logger
	analyzed *prometheus.CounterVec
	vacuumed *prometheus.CounterVec
	// indexBytes and sharedBuffers are sizeOnce's readings; indexesOver whether the last one
	// found the indexes larger than the buffers.
	indexBytes, sharedBuffers prometheus.Gauge
	indexesOver               bool
}

// Maintainer returns the Store's Maintainer, or nil when Config.MaintainInterval was zero.
func (s *Store) Maintainer() *Maintainer { return s.maintainer }

func newMaintainer(pool *pgxpool.Pool, interval time.Duration, logger *slog.Logger, reg prometheus.Registerer) (*Maintainer, error) {
	m := &Maintainer{
		pool: pool, interval: interval, logger: logger,
		analyzed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_postgres_analyze_total",
			Help: "Tables ANALYZEd because their rows changed by more than autovacuum's default threshold since their last analysis.",
		}, []string{"table"}),
		vacuumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_postgres_vacuum_total",
			Help: "Tables VACUUMed because their dead rows passed autovacuum's default threshold.",
		}, []string{"table"}),
		indexBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_postgres_index_bytes",
			Help: "Bytes of the indexes of anchord's tables, as last read.",
		}),
		sharedBuffers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_postgres_shared_buffers_bytes",
			Help: "PostgreSQL's shared_buffers, in bytes; the indexes slow creates down once they outgrow it.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.analyzed, m.vacuumed, m.indexBytes, m.sharedBuffers} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register maintenance metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Run vacuums, analyzes and sizes the indexes every interval until ctx is done. A failed round is logged and
// retried at the next tick: queries do not depend on it, only their plans and speed do.
func (m *Maintainer) Run(ctx context.Context) error {
	loop.Every(ctx, m.interval, func(ctx context.Context) {
		if _, err := m.vacuumOnce(ctx); err != nil && ctx.Err() == nil {
			m.logger.WarnContext(ctx, "vacuum tables", "error", err)
		}
		if _, err := m.analyzeOnce(ctx); err != nil && ctx.Err() == nil {
			m.logger.WarnContext(ctx, "analyze tables", "error", err)
		}
		if _, _, err := m.sizeOnce(ctx); err != nil && ctx.Err() == nil {
			m.logger.WarnContext(ctx, "size the indexes", "error", err)
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
	// VACUUM cannot run in a transaction, so its round holds a session lock on its connection
	// (released with it if the connection dies).
	qVacuumLock   = `SELECT pg_try_advisory_lock(hashtext('anchord_vacuum:' || current_schema()))`
	qVacuumUnlock = `SELECT pg_advisory_unlock(hashtext('anchord_vacuum:' || current_schema()))`
	// autovacuum_vacuum_threshold 50, autovacuum_vacuum_scale_factor 0.2.
	qVacuumDue = `SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND n_dead_tup > 50 + 0.2 * n_live_tup
		ORDER BY relname`
)

// vacuumOnce vacuums the tables that need it and returns their names; none when another
// instance holds the round.
func (m *Maintainer) vacuumOnce(ctx context.Context) ([]string, error) {
	conn, err := m.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire: %w", err)
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, qVacuumLock).Scan(&mine); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if !mine {
		return nil, nil
	}
	defer func() {
		// A cancelled ctx must not leave the lock on a connection that goes back to the pool; a
		// connection that cannot unlock is closed, which releases it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, qVacuumUnlock); err != nil {
			_ = conn.Conn().Close(uctx)
		}
	}()
	rows, err := conn.Query(ctx, qVacuumDue)
	if err != nil {
		return nil, fmt.Errorf("find dead rows: %w", err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find dead rows: %w", err)
	}
	var done []string
	for _, t := range due {
		start := time.Now()
		if _, err := conn.Exec(ctx, "VACUUM (SKIP_LOCKED) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return done, fmt.Errorf("vacuum %s: %w", t, err)
		}
		m.vacuumed.WithLabelValues(t).Inc()
		m.logger.DebugContext(ctx, "table vacuumed", "table", t, "took", time.Since(start))
		done = append(done, t)
	}
	return done, nil
}

// analyzeOnce analyzes the tables that need it and returns their names; none when another instance
// holds the round.
func (m *Maintainer) analyzeOnce(ctx context.Context) ([]string, error) {
	var done []string
	err := pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
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
			m.analyzed.WithLabelValues(t).Inc()
			m.logger.DebugContext(ctx, "table analyzed", "table", t, "took", time.Since(start))
			done = append(done, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}
