package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
)

// Relayout moves a database that indexed operations before migration 30 to the layout a new
// one has (settleIndexLayout), in the background, while the store takes writes and reads: such
// a database creates DIDs about a fifth slower and takes ~60 more bytes per DID. It goes in
// three phases, each a series of short write transactions, and what a step did is committed
// with it, so a stop or a crash at any point goes on from there at the next start:
//
//   - positions: the states written before migration 30 get the positions of their DID's rows
//     (in suffix order, from did_operations through the suffix index); then reads turn over to
//     positions and did_operations_suffix is dropped.
//   - copy: did_states, keyed by suffix, is copied into a table by rowid in suffix order, while
//     triggers mirror every write of the old table into the new one; the copy never overwrites
//     a mirrored row. Then, in one transaction, the new table takes the old one's name.
//   - delete: the old table's rows are deleted a page at a time, then the empty table dropped.
//     Dropping it whole would free every one of its pages under the write lock at once.
//
// The phase is read from the schema at every step (which index and tables exist), and the
// cursor of the first two from a setting; a database in the current layout has nothing to do.
type Relayout struct {
	s      *Store
	logger *slog.Logger
	m      *relayoutMetrics
	// Rows per step of each phase. A step holds the write lock that every commit of the
	// server waits for: at 200,000 DIDs they took a few tens of milliseconds each.
	positionsPage, copyPage, deletePage int
	// restRatio is the rest after a step, as a share of how long it held the write lock: the
	// server's own commits get the lock at least as long as the pass does.
	restRatio float64
	// retry is the wait while the states of DIDs indexed before did_states are still to be
	// computed (store.DIDStateFillSetting).
	retry time.Duration

	// phase and its start, rows and longest step, for the log line that ends it.
	phase   relayoutPhase
	started time.Time
	rows    int64
	longest time.Duration
}

type relayoutPhase int

const (
	relayoutDone relayoutPhase = iota
	relayoutPositions
	relayoutCopy
	relayoutDelete
)

func (p relayoutPhase) String() string {
	return [...]string{"done", "positions", "copy", "delete"}[p]
}

// relayoutSetting holds the cursor of the phase under way: "positions:<suffix>" or
// "copy:<suffix>", the last state done.
const relayoutSetting = "did_index_relayout"

// The copy's triggers are dropped before the swap renames the tables: SQLite would rewrite what
// they refer to along with the names.
const (
	qRelayoutTableExists = `SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`
	// qRelayoutNextStates pages through did_states in suffix order, saying which states name no
	// positions.
	qRelayoutNextStates = `SELECT suffix, positions IS NULL FROM did_states WHERE suffix > ? ORDER BY suffix LIMIT ?`
	// qRelayoutRowsOf lists a DID's rows as the observer names them in a state's positions:
	// every row, in anchor order.
	qRelayoutRowsOf = `SELECT anchor_seq, op_index FROM did_operations INDEXED BY did_operations_suffix
		WHERE suffix = ? ORDER BY anchor_seq, op_index`
	qRelayoutSetPositions = `UPDATE did_states SET positions = ? WHERE suffix = ?`
	qRelayoutUnfilled     = `SELECT EXISTS (SELECT 1 FROM did_states WHERE positions IS NULL)`

	// The mirror of did_states during the copy: what a write does to the old table it does to
	// the new one, whether or not the copy got to the row yet.
	qRelayoutCreate = `CREATE TABLE did_states_relayout (suffix TEXT PRIMARY KEY, state BLOB NOT NULL, positions BLOB);
		CREATE TRIGGER did_states_relayout_insert AFTER INSERT ON did_states BEGIN
			INSERT INTO did_states_relayout (suffix, state, positions) VALUES (NEW.suffix, NEW.state, NEW.positions)
			ON CONFLICT (suffix) DO UPDATE SET state = excluded.state, positions = excluded.positions;
		END;
		CREATE TRIGGER did_states_relayout_update AFTER UPDATE ON did_states BEGIN
			DELETE FROM did_states_relayout WHERE suffix = OLD.suffix AND OLD.suffix <> NEW.suffix;
			INSERT INTO did_states_relayout (suffix, state, positions) VALUES (NEW.suffix, NEW.state, NEW.positions)
			ON CONFLICT (suffix) DO UPDATE SET state = excluded.state, positions = excluded.positions;
		END;
		CREATE TRIGGER did_states_relayout_delete AFTER DELETE ON did_states BEGIN
			DELETE FROM did_states_relayout WHERE suffix = OLD.suffix;
		END`
	// qRelayoutCopyEnd is the last suffix of the next page of the copy (OFFSET page-1).
	qRelayoutCopyEnd = `SELECT suffix FROM did_states WHERE suffix > ? ORDER BY suffix LIMIT 1 OFFSET ?`
	// OR IGNORE: a row already there was mirrored, by a write at least as new as this copy.
	qRelayoutCopyTo = `INSERT OR IGNORE INTO did_states_relayout (suffix, state, positions)
		SELECT suffix, state, positions FROM did_states WHERE suffix > ? AND suffix <= ? ORDER BY suffix`
	qRelayoutCopyRest = `INSERT OR IGNORE INTO did_states_relayout (suffix, state, positions)
		SELECT suffix, state, positions FROM did_states WHERE suffix > ? ORDER BY suffix`
	qRelayoutSwap = `DROP TRIGGER did_states_relayout_insert;
		DROP TRIGGER did_states_relayout_update;
		DROP TRIGGER did_states_relayout_delete;
		ALTER TABLE did_states RENAME TO did_states_keyed;
		ALTER TABLE did_states_relayout RENAME TO did_states`
	qRelayoutSettingDelete = `DELETE FROM settings WHERE name = ?`
	qRelayoutDeleteKeyed   = `DELETE FROM did_states_keyed WHERE suffix IN
		(SELECT suffix FROM did_states_keyed ORDER BY suffix LIMIT ?)`
	qRelayoutDropKeyed = `DROP TABLE did_states_keyed`
	// qRelayoutDropLeftover drops a copy that settleIndexLayout made pointless, by replacing
	// did_states of a database that turned out to have indexed nothing.
	qRelayoutDropLeftover = `DROP TABLE did_states_relayout`
)

// errRelayoutWaits is a database whose older DIDs have no state yet: until observer.FillStates
// has computed them, only the suffix index finds those DIDs' rows.
var errRelayoutWaits = errors.New("the states of DIDs indexed before did_states are still to be computed")

type relayoutMetrics struct {
	phase prometheus.Gauge
	rows  *prometheus.CounterVec
	held  prometheus.Histogram
}

// NewRelayout returns the pass that moves s to the current layout of the per-DID index; its Run
// does nothing on a database in that layout.
func NewRelayout(s *Store, logger *slog.Logger, reg prometheus.Registerer) (*Relayout, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &relayoutMetrics{
		phase: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_sqlite_relayout_phase",
			Help: "Phase of the move of an older database to the current per-DID index layout: 0 none or done, 1 positions, 2 copy, 3 delete.",
		}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_sqlite_relayout_rows_total",
			Help: "States the layout move went through, by phase: given positions (positions), copied (copy), deleted from the old table (delete).",
		}, []string{"phase"}),
		held: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "anchord_sqlite_relayout_step_seconds",
			Help:    "Time one step of the layout move held SQLite's write lock, which every commit of the server waits for.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.phase, m.rows, m.held} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register relayout metrics: %w", err)
			}
		}
	}
	return &Relayout{
		s: s, logger: logger, m: m,
		positionsPage: 2000, copyPage: 5000, deletePage: 5000,
		restRatio: 1, retry: time.Minute,
	}, nil
}

// Run moves the database over, step by step, and then waits for ctx to end. A failed step is
// logged and tried again: nothing the server does depends on the move.
func (r *Relayout) Run(ctx context.Context) error {
	for attempt := 0; ; {
		phase, held, err := r.runOnce(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errRelayoutWaits):
			wait = r.retry
			r.logger.InfoContext(ctx, "per-DID index layout: waiting", "reason", err, "retry_in", wait)
		case err != nil:
			attempt++
			wait = loop.Backoff(attempt, time.Second, 2, time.Minute)
			r.logger.WarnContext(ctx, "move the per-DID index to the current layout", "phase", phase, "error", err, "retry_in", wait)
		case phase == relayoutDone:
			<-ctx.Done()
			return nil
		default:
			attempt = 0
			wait = time.Duration(float64(held) * r.restRatio)
		}
		if !loop.Sleep(ctx, wait) {
			return nil
		}
	}
}

// runOnce takes one step of the phase the database is in and returns that phase and how long
// the step held the write lock; relayoutDone once there is nothing left to do.
func (r *Relayout) runOnce(ctx context.Context) (relayoutPhase, time.Duration, error) {
	phase, err := r.phaseOf(ctx)
	if err != nil {
		return phase, 0, err
	}
	r.enter(ctx, phase)
	var n int64
	var held time.Duration
	switch phase {
	case relayoutPositions:
		var end bool
		if n, end, held, err = r.fillPositions(ctx); err == nil && end {
			var h time.Duration
			h, err = r.switchReads(ctx)
			held = max(held, h)
		}
	case relayoutCopy:
		n, held, err = r.copyStates(ctx)
	case relayoutDelete:
		n, held, err = r.deleteKeyed(ctx)
	}
	if err != nil {
		return phase, held, err
	}
	r.rows += n
	r.longest = max(r.longest, held)
	if phase != relayoutDone {
		r.m.rows.WithLabelValues(phase.String()).Add(float64(n))
		r.m.held.Observe(held.Seconds())
	}
	return phase, held, nil
}

// enter logs the end of the phase before phase and the start of phase.
func (r *Relayout) enter(ctx context.Context, phase relayoutPhase) {
	if phase == r.phase && !r.started.IsZero() {
		return
	}
	if !r.started.IsZero() && r.phase != relayoutDone {
		r.logger.InfoContext(ctx, "per-DID index layout: phase done", "phase", r.phase, "rows", r.rows,
			"took", time.Since(r.started).Round(time.Millisecond), "longest_step", r.longest.Round(time.Microsecond))
	}
	if phase != relayoutDone {
		r.logger.InfoContext(ctx, "per-DID index layout: moving to the current one", "phase", phase)
	} else if !r.started.IsZero() {
		r.logger.InfoContext(ctx, "per-DID index layout: the database has the current one")
	}
	r.phase, r.started, r.rows, r.longest = phase, time.Now(), 0, 0
	r.m.phase.Set(float64(phase))
}

// phaseOf reads the phase from the schema.
func (r *Relayout) phaseOf(ctx context.Context) (relayoutPhase, error) {
	db := r.s.writer
	var suffixIndex, keyed, old, copying bool
	if err := db.QueryRowContext(ctx, qDIDSuffixIndexExists).Scan(&suffixIndex); err != nil {
		return relayoutDone, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if suffixIndex {
		return relayoutPositions, nil
	}
	if err := db.QueryRowContext(ctx, qRelayoutTableExists, "did_states_keyed").Scan(&old); err != nil {
		return relayoutDone, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if old {
		return relayoutDelete, nil
	}
	if err := db.QueryRowContext(ctx, qDIDStatesWithoutRowid).Scan(&keyed); err != nil {
		return relayoutDone, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if keyed {
		return relayoutCopy, nil
	}
	if err := db.QueryRowContext(ctx, qRelayoutTableExists, "did_states_relayout").Scan(&copying); err != nil {
		return relayoutDone, fmt.Errorf("read the per-DID index's layout: %w", err)
	}
	if copying {
		_, err := r.step(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, qRelayoutDropLeftover); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, qRelayoutSettingDelete, relayoutSetting)
			return err
		})
		if err != nil {
			return relayoutDone, fmt.Errorf("drop a leftover copy of did_states: %w", err)
		}
	}
	return relayoutDone, nil
}

// step runs fn in a write transaction and returns how long it held the write lock: from its
// first statement to when other connections see its commit (the sync of the WAL that InTx makes
// after that is outside the lock).
func (r *Relayout) step(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) (time.Duration, error) {
	var held time.Duration
	err := r.s.InTx(ctx, func(ctx context.Context, e store.Executor) error {
		start := time.Now()
		store.OnVisible(ctx, func() { held = time.Since(start) })
		return fn(ctx, e.(executor).w.(*sql.Tx))
	})
	return held, err
}

// cursor returns where phase got to.
func (r *Relayout) cursor(ctx context.Context, tx *sql.Tx, phase relayoutPhase) (string, error) {
	var v []byte
	err := tx.QueryRowContext(ctx, qSettingGet, relayoutSetting).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the relayout's cursor: %w", err)
	}
	after, ok := strings.CutPrefix(string(v), phase.String()+":")
	if !ok {
		return "", nil // another phase's
	}
	return after, nil
}

func putCursor(ctx context.Context, tx *sql.Tx, phase relayoutPhase, after string) error {
	if _, err := tx.ExecContext(ctx, qSettingPut, relayoutSetting, []byte(phase.String()+":"+after), nowMicros()); err != nil {
		return fmt.Errorf("record the relayout's cursor: %w", err)
	}
	return nil
}

// fillPositions gives the next page of states without positions theirs, and reports the states
// it filled and whether it reached the last state. The positions are read in the transaction that
// writes them: the observer, which writes every state it touches with its positions, cannot
// index a row of the DID in between.
func (r *Relayout) fillPositions(ctx context.Context) (filled int64, end bool, held time.Duration, err error) {
	held, err = r.step(ctx, func(ctx context.Context, tx *sql.Tx) error {
		filled, end = 0, false
		after, err := r.cursor(ctx, tx, relayoutPositions)
		if err != nil {
			return err
		}
		var todo []string
		seen := 0
		rows, err := tx.QueryContext(ctx, qRelayoutNextStates, after, r.positionsPage)
		err = eachRow(rows, err, func(rows *sql.Rows) error {
			var suffix string
			var unfilled bool
			if err := rows.Scan(&suffix, &unfilled); err != nil {
				return err
			}
			seen++
			after = suffix
			if unfilled {
				todo = append(todo, suffix)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("page through states: %w", err)
		}
		end = seen < r.positionsPage
		if len(todo) > 0 {
			list, err := tx.PrepareContext(ctx, qRelayoutRowsOf)
			if err != nil {
				return err
			}
			defer list.Close()
			set, err := tx.PrepareContext(ctx, qRelayoutSetPositions)
			if err != nil {
				return err
			}
			defer set.Close()
			for _, suffix := range todo {
				var positions []store.DIDPosition
				rows, err := list.QueryContext(ctx, suffix)
				err = eachRow(rows, err, func(rows *sql.Rows) error {
					var p store.DIDPosition
					if err := rows.Scan(&p.AnchorSeq, &p.Index); err != nil {
						return err
					}
					positions = append(positions, p)
					return nil
				})
				if err != nil {
					return fmt.Errorf("rows of %s: %w", suffix, err)
				}
				// Empty rather than NULL for a state without rows (none is expected): it names
				// what the suffix index finds, and the pass does not come back to it.
				if _, err := set.ExecContext(ctx, store.AppendPositions([]byte{}, positions), suffix); err != nil {
					return fmt.Errorf("positions of %s: %w", suffix, err)
				}
			}
		}
		filled = int64(len(todo))
		return putCursor(ctx, tx, relayoutPositions, after)
	})
	if err != nil {
		return 0, false, held, fmt.Errorf("fill positions: %w", err)
	}
	return filled, end, held, nil
}

// switchReads turns reads over to positions and drops the suffix index, once every state names
// its positions; otherwise it sends the pass through the states again.
func (r *Relayout) switchReads(ctx context.Context) (time.Duration, error) {
	v, err := r.s.SettingGet(ctx, store.DIDStateFillSetting)
	switch {
	// "done" is the fill's last value (store.DIDStateFillSetting).
	case errors.Is(err, store.ErrNotFound), err == nil && string(v) == "done":
	case err != nil:
		return 0, err
	default:
		return 0, errRelayoutWaits
	}
	// Outside the write lock: a scan of every state. A state written with no positions after
	// the pass passed it (none is expected: every state names at least its create's) sends it
	// through again; one written after the scan is told by the layout's count, read again
	// under the lock of the drop.
	unnamed := r.s.layout.unnamed.Load()
	var unfilled bool
	if err := r.s.reader.QueryRowContext(ctx, qRelayoutUnfilled).Scan(&unfilled); err != nil {
		return 0, fmt.Errorf("look for states without positions: %w", err)
	}
	if unfilled {
		r.logger.WarnContext(ctx, "per-DID index layout: states without positions after the pass; going through them again")
		return r.step(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return putCursor(ctx, tx, relayoutPositions, "")
		})
	}
	// Reads turn over before the drop, and the drop waits for the ones still going through the
	// index; a read that fails over in between finds the same rows through positions.
	if err := r.s.layout.stopSuffixReads(ctx); err != nil {
		return 0, err
	}
	again := false
	held, err := r.step(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if again = r.s.layout.unnamed.Load() != unnamed; again {
			// Reads by positions would not find that DID's operations; the suffix index still
			// does, and the pass comes back to the state.
			r.s.layout.bySuffix.Store(true)
			return putCursor(ctx, tx, relayoutPositions, "")
		}
		if _, err := tx.ExecContext(ctx, qDIDSuffixIndexDrop); err != nil {
			return fmt.Errorf("drop the suffix index: %w", err)
		}
		return putCursor(ctx, tx, relayoutCopy, "")
	})
	if err != nil {
		return held, fmt.Errorf("switch reads to positions: %w", err)
	}
	if !again {
		r.s.layout.suffixIndexGone.Store(true)
	}
	if again {
		r.logger.WarnContext(ctx, "per-DID index layout: a state without positions was written during the switch; going through the states again")
	}
	return held, nil
}

// copyStates copies the next page of did_states into its new table, creating the table and its
// mirror first; once the rest fits in a page it copies the rest and swaps the tables.
func (r *Relayout) copyStates(ctx context.Context) (copied int64, held time.Duration, err error) {
	held, err = r.step(ctx, func(ctx context.Context, tx *sql.Tx) error {
		copied = 0
		var exists bool
		if err := tx.QueryRowContext(ctx, qRelayoutTableExists, "did_states_relayout").Scan(&exists); err != nil {
			return err
		}
		if !exists {
			// The cursor of an earlier copy, if any, went with its table.
			if _, err := tx.ExecContext(ctx, qRelayoutCreate); err != nil {
				return fmt.Errorf("create the new did_states: %w", err)
			}
			return putCursor(ctx, tx, relayoutCopy, "")
		}
		after, err := r.cursor(ctx, tx, relayoutCopy)
		if err != nil {
			return err
		}
		var end string
		err = tx.QueryRowContext(ctx, qRelayoutCopyEnd, after, r.copyPage-1).Scan(&end)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("find the copy's next page: %w", err)
		}
		var res sql.Result
		if err == nil {
			res, err = tx.ExecContext(ctx, qRelayoutCopyTo, after, end)
		} else {
			res, err = tx.ExecContext(ctx, qRelayoutCopyRest, after)
		}
		if err != nil {
			return fmt.Errorf("copy states: %w", err)
		}
		copied, _ = res.RowsAffected()
		if end != "" {
			return putCursor(ctx, tx, relayoutCopy, end)
		}
		// Every state is in the new table: copied, or mirrored since its triggers exist.
		if _, err := tx.ExecContext(ctx, qRelayoutSwap); err != nil {
			return fmt.Errorf("swap did_states: %w", err)
		}
		if _, err := tx.ExecContext(ctx, qRelayoutSettingDelete, relayoutSetting); err != nil {
			return fmt.Errorf("delete the relayout's cursor: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, held, fmt.Errorf("copy did_states: %w", err)
	}
	return copied, held, nil
}

// deleteKeyed deletes a page of the old did_states, or drops it once it is empty.
func (r *Relayout) deleteKeyed(ctx context.Context) (deleted int64, held time.Duration, err error) {
	held, err = r.step(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, qRelayoutDeleteKeyed, r.deletePage)
		if err != nil {
			return err
		}
		if deleted, _ = res.RowsAffected(); deleted > 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, qRelayoutDropKeyed)
		return err
	})
	if err != nil {
		return 0, held, fmt.Errorf("delete the old did_states: %w", err)
	}
	return deleted, held, nil
}

// eachRow hands each of rows to scan and closes them; err is the query's.
func eachRow(rows *sql.Rows, err error, scan func(*sql.Rows) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
