package store

import (
	"context"
	"fmt"
	"time"
)

// TaskExecutor holds the queries of the task manager (permits), the op-queue task entries and
// the expiry service.
//
// Permits. A task permit is one row per periodic singleton task. Its holder may run the task;
// its term increases on every change of holder and fences everything written under the permit.
// Every time comparison uses the database clock (the optional Now of the params replaces it,
// for tests only; production code MUST leave it nil). A permit is stale when its updated_at is
// older than the StaleAfter its taker passes (check interval + task interval).
type TaskExecutor interface {
	// TaskPermitAcquire takes, renews or takes over a permit with one conditional statement and
	// reports whether the caller holds it afterwards. The caller gets it when no row exists
	// (term 1), when it holds it already, when it was released, or when it is stale. Renewal
	// (same holder and p.Term) keeps the term and the status and refreshes updated_at; any other
	// gain increases the term and resets the status to idle. A holder that passes a term it does
	// not hold (0 after a restart) is a new incarnation of itself: it gains a new term at once,
	// without waiting for staleness, so instance ids MUST be unique among live instances.
	TaskPermitAcquire(ctx context.Context, p TaskPermitAcquireParams) (TaskPermit, bool, error)
	// TaskPermitStart marks a run as started (status running) if the caller holds the permit
	// under p.Term, no run is in progress and p.Interval has passed since last_run_at. It
	// returns the permit and whether the run started; ErrLeaseLost if the caller does not hold
	// the permit under p.Term.
	TaskPermitStart(ctx context.Context, p TaskPermitStartParams) (TaskPermit, bool, error)
	// TaskPermitRefresh sets updated_at while a run is in progress, fenced: ErrLeaseLost unless
	// the caller holds the permit under p.Term and it is running. Inside a transaction on
	// PostgreSQL it also locks the permit row until the transaction ends, so a task's write
	// committed with it cannot interleave with a takeover (see taskmgr.Manager.Fence).
	TaskPermitRefresh(ctx context.Context, p TaskPermitFence) error
	// TaskPermitFinish ends a run: status idle, last_run_at = now. It is fenced (ErrLeaseLost
	// unless the caller holds the permit under p.Term) and idempotent: on an idle permit it
	// only refreshes updated_at, so a holder unsure whether its Start committed can call it.
	TaskPermitFinish(ctx context.Context, p TaskPermitFence) error
	// TaskPermitRelease gives a permit up (holder empty, status idle) so another instance
	// takes it at its next check; ErrLeaseLost if the caller no longer holds it under p.Term.
	TaskPermitRelease(ctx context.Context, p TaskPermitFence) error
	// TaskPermitGet returns a permit, or ErrNotFound.
	TaskPermitGet(ctx context.Context, taskID string) (TaskPermit, error)

	// ExpiredDeleteMany deletes up to p.Limit rows of p.Table whose p.Column is at or before
	// the database clock and returns how many it deleted. Table and Column MUST come from code,
	// never from input; backends accept only plain lower-case identifiers, and refuse op_queue
	// and dead_letters, whose rows are never deleted by expiry. The column holds the backend's
	// time type (TIMESTAMPTZ on PostgreSQL, INTEGER Unix microseconds on SQLite), should be
	// indexed, and the table must have a rowid on SQLite. On PostgreSQL rows locked by other
	// transactions are skipped, not waited for.
	ExpiredDeleteMany(ctx context.Context, p ExpiredDeleteParams) (int64, error)
	// OpQueueParkExpired moves up to p.Limit expired op_queue rows (expires_at at or before the
	// database clock, oldest first) to dead_letters with kind DeadLetterOperation and reason
	// DeadLetterReasonExpired, in one transaction: the payload is the request, attempts and
	// history are copied and one history line records the expiry. It returns the OpIDs it
	// parked. On PostgreSQL rows locked by other transactions (an anchor's Ack in flight) are
	// skipped, so an operation is either anchored or parked, never both.
	OpQueueParkExpired(ctx context.Context, p OpQueueParkExpiredParams) ([]string, error)
}

// Task permit statuses.
const (
	TaskStatusIdle    = "idle"
	TaskStatusRunning = "running"
)

// DeadLetterReasonExpired is the reason of operations parked by expiry.
const DeadLetterReasonExpired = "expired"

// TaskPermit is a row of task_permits.
type TaskPermit struct {
	TaskID string
	// Holder is the instance id of the holder; empty after a graceful release.
	Holder string
	// PreviousHolder is the holder before the last change of holder (empty if there was none,
	// or if the permit had been released).
	PreviousHolder string
	Term           int64
	Status         string
	UpdatedAt      time.Time
	// RunStartedAt is when the current or last run started; zero if none ever did.
	RunStartedAt time.Time
	// LastRunAt is when the last run finished; zero if none ever did.
	LastRunAt time.Time
}

// TaskPermitAcquireParams asks for a permit.
type TaskPermitAcquireParams struct {
	TaskID string
	Holder string
	// Term is the term the caller believes it holds; 0 if none.
	Term int64
	// StaleAfter: a permit whose updated_at is older than this may be taken over.
	StaleAfter time.Duration
	// Now replaces the database clock; tests only.
	Now *time.Time
}

// TaskPermitStartParams asks to start a run.
type TaskPermitStartParams struct {
	TaskID string
	Holder string
	Term   int64
	// Interval is the minimum time between the end of the last run and this start.
	Interval time.Duration
	// Now replaces the database clock; tests only.
	Now *time.Time
}

// TaskPermitFence identifies a permit as held by Holder under Term: the condition of every
// fenced permit write.
type TaskPermitFence struct {
	TaskID string
	Holder string
	Term   int64
	// Now replaces the database clock; tests only.
	Now *time.Time
}

// ExpiredDeleteParams deletes expired rows of a table whose rows are disposable.
type ExpiredDeleteParams struct {
	Table  string
	Column string
	Limit  int
	// Now replaces the database clock; tests only.
	Now *time.Time
}

// OpQueueParkExpiredParams parks expired queued operations.
type OpQueueParkExpiredParams struct {
	Limit int
	// Now replaces the database clock; tests only.
	Now *time.Time
}

// neverExpire lists tables whose rows expiry MUST NOT delete: they are durable state (accepted
// operations are parked instead, parked items wait for an operator, anchors and CAS content
// are the ledger's history). A guard rail; the rule is that expiry registrations come from code.
// ap_inbox is not among them: only its handled (done) rows carry an expiry time, queued and
// parked ones never do.
var neverExpire = map[string]bool{
	"op_queue": true, "dead_letters": true, "anchors": true, "did_operations": true, "did_states": true, "cas_objects": true,
	"settings": true, "schema_migrations": true, "task_permits": true,
	"ap_outbox": true, "ap_relationships": true, "ap_accept_list": true,
}

// CheckExpiryTable returns an error unless table and column are plain lower-case SQL
// identifiers (so they can be placed in a statement as they are) and table is not one whose
// rows are never disposable. Backends check it in ExpiredDeleteMany; callers check it when
// they register a table.
func CheckExpiryTable(table, column string) error {
	for _, id := range []string{table, column} {
		if !plainIdentifier(id) {
			return fmt.Errorf("expiry of %q.%q: %q is not a plain lower-case identifier", table, column, id)
		}
	}
	if neverExpire[table] {
		return fmt.Errorf("expiry of %q: its rows are never disposable", table)
	}
	return nil
}

func plainIdentifier(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
