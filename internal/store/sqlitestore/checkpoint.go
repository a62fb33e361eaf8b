package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
)

// CheckpointIntervalDefault is how often the daemon's Checkpointer copies the WAL into the
// database file (Config.CheckpointInterval).
const CheckpointIntervalDefault = time.Second

// Checkpointer copies committed pages from the WAL into the database file, in the background, on a
// connection of its own.
//
// While Run runs, the writer connection does not checkpoint (wal_autocheckpoint(0)); before and
// after, it does, so the WAL stays bounded when nothing else copies it. When it did under load, the commit
// that took the WAL past the threshold ran the checkpoint before returning: it copied up to
// 10,000 pages into the database file and fsynced it while the only write connection was held,
// and every commit queued behind it waited. Most of those pages are the per-DID suffix index's,
// one random page per indexed operation, so the stall grew with the number of DIDs: at a fixed
// 4,000 creates/s, POST p99 rose from ~100 ms to ~340 ms over ten minutes.
//
// A PASSIVE checkpoint takes SQLite's checkpoint lock, not its write lock: commits go on
// appending to the WAL while it runs, and it never waits for readers (it copies what no reader
// still needs and leaves the rest for the next round).
//
// SQLite starts the WAL from its beginning again only when a write transaction begins on a WAL
// that is copied to its end, and under a steady load another commit always lands between a
// background round and the writer's next transaction: the WAL grew by gigabytes, and every page
// lookup of every connection walks its index. So once the WAL holds walRestartFrames, a round
// finishes on the writer's connection: a second checkpoint there copies only the frames
// committed since the first (milliseconds), and the writer's next transaction restarts the WAL.
type Checkpointer struct {
	db       *sql.DB
	writer   *sql.DB
	interval time.Duration
	// restartFrames is walRestartFrames, smaller in tests.
	restartFrames int64
	// finishedAt is the WAL's length at the last finish on the writer's connection.
	finishedAt int64
	logger     *slog.Logger
	m          *checkpointMetrics
}

// CheckpointResult is what one checkpoint round found.
type CheckpointResult struct {
	// Busy is set when SQLite could not take the checkpoint lock (another checkpoint ran).
	Busy bool
	// Frames is the number of frames in the WAL; Copied how many of them are in the database
	// file now. Copied < Frames means a reader still needed the rest.
	Frames, Copied int64
	// Finished is set when the round went on to the writer's connection (walRestartFrames).
	Finished bool
}

// walRestartFrames is the WAL length (in pages, about 40 MB) past which a round finishes on the
// writer's connection so that the WAL restarts: the length at which the writer checkpoints by
// itself when no Checkpointer runs (the DSN's wal_autocheckpoint).
const walRestartFrames = 10_000

type checkpointMetrics struct {
	duration prometheus.Histogram
	pending  prometheus.Gauge
	finished prometheus.Counter
}

// Checkpointer returns the Store's background checkpointer, or nil if the Store checkpoints at
// commit (Config.CheckpointInterval zero). Run must be running while the Store takes writes:
// without it the WAL grows without bound.
func (s *Store) Checkpointer() *Checkpointer { return s.ckpt }

func newCheckpointer(db, writer *sql.DB, interval time.Duration, logger *slog.Logger, reg prometheus.Registerer) (*Checkpointer, error) {
	m := &checkpointMetrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "anchord_sqlite_checkpoint_duration_seconds",
			Help:    "Time of one WAL checkpoint round, including its finish on the writer's connection (anchord_sqlite_checkpoint_restarts_total).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_sqlite_wal_uncopied_frames",
			Help: "WAL frames the last checkpoint round could not copy because a reader still needed them.",
		}),
		finished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_sqlite_checkpoint_restarts_total",
			Help: "Checkpoint rounds finished on the writer's connection so that the WAL restarts from its beginning.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.duration, m.pending, m.finished} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register checkpoint metrics: %w", err)
			}
		}
	}
	return &Checkpointer{db: db, writer: writer, interval: interval, restartFrames: walRestartFrames, logger: logger, m: m}, nil
}

// Run checkpoints every interval until ctx is done, with the writer's own checkpoint off
// meanwhile. A failed round is logged and retried at the next tick: commits do not depend on it,
// only the size of the WAL does.
func (c *Checkpointer) Run(ctx context.Context) error {
	// The setting is the connection's: the writer pool holds its one connection for good, and a
	// connection opened anew (after an error) starts from the DSN's, which checkpoints.
	if _, err := c.writer.ExecContext(ctx, "PRAGMA wal_autocheckpoint(0)"); err != nil {
		return fmt.Errorf("checkpointer: hand over from the writer: %w", err)
	}
	defer func() {
		// Back to the writer, for whatever still commits before the store closes.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := c.writer.ExecContext(rctx, fmt.Sprintf("PRAGMA wal_autocheckpoint(%d)", walRestartFrames)); err != nil {
			c.logger.WarnContext(rctx, "checkpointer: hand back to the writer", "error", err)
		}
	}()
	loop.Every(ctx, c.interval, func(ctx context.Context) {
		if _, err := c.runOnce(ctx); err != nil && ctx.Err() == nil {
			c.logger.WarnContext(ctx, "checkpoint the WAL", "error", err)
		}
	})
	return nil
}

// runOnce runs a PASSIVE checkpoint on its own connection and, once the WAL is long and copied to
// its end, finishes on the writer's (the only part that holds up commits).
func (c *Checkpointer) runOnce(ctx context.Context) (CheckpointResult, error) {
	start := time.Now()
	r, err := checkpoint(ctx, c.db)
	if err != nil {
		return CheckpointResult{}, err
	}
	// finished: nothing was committed since the last finish, so the writer has not restarted the
	// WAL yet and another finish would change nothing (an idle server after a burst).
	if r.Frames >= c.restartFrames && r.Copied == r.Frames && r.Frames != c.finishedAt {
		// More rounds here first, each copying what landed during the one before, so that
		// the round on the writer's connection has little left to copy.
		for range 3 {
			prev := r.Frames
			if r, err = checkpoint(ctx, c.db); err != nil {
				return CheckpointResult{}, err
			}
			if r.Frames-prev < 256 || r.Copied != r.Frames {
				break
			}
		}
		if r, err = checkpoint(ctx, c.writer); err != nil {
			return CheckpointResult{}, err
		}
		r.Finished = true
		c.finishedAt = r.Frames
		c.m.finished.Inc()
	}
	c.m.duration.Observe(time.Since(start).Seconds())
	c.m.pending.Set(float64(max(r.Frames-r.Copied, 0)))
	return r, nil
}

func checkpoint(ctx context.Context, db *sql.DB) (CheckpointResult, error) {
	var busy int
	var r CheckpointResult
	if err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &r.Frames, &r.Copied); err != nil {
		return CheckpointResult{}, fmt.Errorf("checkpoint: %w", err)
	}
	r.Busy = busy != 0
	return r, nil
}
