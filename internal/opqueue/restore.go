package opqueue

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
)

// Restore queues operations again together with also, in one transaction: a dead letter is
// retried without a moment in which an operation is in both places or in neither. See
// RestoreTx.
func (q *Queue) Restore(ctx context.Context, ops []NewOp, also func(ctx context.Context, tx store.Executor) error) error {
	err := q.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := q.RestoreTx(ctx, tx, ops); err != nil {
			return err
		}
		if also != nil {
			return also(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restore %d operations: %w", len(ops), err)
	}
	return nil
}

// RestoreTx queues operations again inside the caller's transaction tx: a retried dead letter,
// or what a failed anchor gives back (GiveBackTx). An OpID already queued is handed to this
// instance, not duplicated. The in-memory queue learns of the rows once tx has committed
// (store.OnCommit), so a rollback leaves nothing behind. Restore bypasses the backlog limit:
// these operations were accepted long ago.
func (q *Queue) RestoreTx(ctx context.Context, tx store.Executor, ops []NewOp) error {
	params, ids, err := Rows{InstanceID: q.cfg.InstanceID, Lifespan: q.cfg.Lifespan}.upsert(ctx, tx, ops)
	if err != nil {
		return err
	}
	store.OnCommit(ctx, func() {
		now := q.cfg.NowFunc()
		restored := make([]*Op, len(ops))
		for i, p := range params {
			restored[i] = &Op{
				ID: ids[i], OpID: p.OpID, Suffix: p.Suffix, Type: p.Type, Request: p.Request,
				Attempts: p.Attempts, History: p.History, EnqueuedAt: now, AvailableAt: now, Parsed: ops[i].Parsed,
			}
		}
		q.adopt(restored)
		q.m.restored.Add(float64(len(ops)))
	})
	return nil
}

// GiveBackTx queues the operations of failed anchor seq again inside tx, the transaction that
// fails the anchor (the durability chain's link 4), and forgets that they were anchored, so
// they are not taken for duplicates.
func (q *Queue) GiveBackTx(ctx context.Context, tx store.Executor, seq int64, ops []NewOp) error {
	if err := forgetAnchored(ctx, tx, seq, ops); err != nil {
		return err
	}
	return q.RestoreTx(ctx, tx, ops)
}

// forgetAnchored deletes the duplicate guard's rows of ops under anchor seq. The ids are those
// Ack recorded: an operation's id is the digest of its stored request, which the batch files
// give back byte for byte. Were one to differ, its old row would only keep a stale copy of the
// operation out of the queue, while the copy given back is queued under its own id.
func forgetAnchored(ctx context.Context, tx store.Executor, seq int64, ops []NewOp) error {
	opIDs := make([]string, len(ops))
	for i, op := range ops {
		opIDs[i] = cmp.Or(op.OpID, OpIDOf(op.Request))
	}
	if err := tx.AnchoredOpsDeleteByAnchor(ctx, seq, opIDs); err != nil {
		return fmt.Errorf("give back operations of anchor %d: %w", seq, err)
	}
	return nil
}

// Rows writes queue rows for a queue that lives in another process: a separate submitter
// process (--roles submitter) gives a failed anchor's operations back to the API instance's
// queue, which finds them with Watch (or, owned by an instance without a task entry, the
// op-queue monitor reposts them).
type Rows struct {
	InstanceID string
	Lifespan   time.Duration
}

// GiveBackTx is Queue.GiveBackTx for a queue in another process.
func (r Rows) GiveBackTx(ctx context.Context, tx store.Executor, seq int64, ops []NewOp) error {
	if err := forgetAnchored(ctx, tx, seq, ops); err != nil {
		return err
	}
	_, _, err := r.upsert(ctx, tx, ops)
	return err
}

func (r Rows) upsert(ctx context.Context, tx store.Executor, ops []NewOp) ([]store.OpQueueInsertParams, []int64, error) {
	params := make([]store.OpQueueInsertParams, len(ops))
	for i, op := range ops {
		params[i] = store.OpQueueInsertParams{
			OpID: cmp.Or(op.OpID, OpIDOf(op.Request)), Suffix: op.Suffix, Type: op.Type, Request: op.Request,
			InstanceID: r.InstanceID, Lifespan: cmp.Or(r.Lifespan, LifespanDefault), Attempts: op.Attempts, History: op.History,
		}
	}
	ids, err := tx.OpQueueUpsertMany(ctx, params)
	if err != nil {
		return nil, nil, fmt.Errorf("queue %d operations again: %w", len(ops), err)
	}
	return params, ids, nil
}

// SyncIntervalDefault is how often Watch looks for rows written by other components.
const SyncIntervalDefault = 2 * time.Second

// Watch adds to the in-memory queue, every interval until ctx is done, the rows of this
// instance that it did not write itself: the operations of a failed anchor that a separate
// submitter process gave back (--roles submitter). Rows given back in this process reach the
// queue through RestoreTx; for them Watch is only a safety net.
func (q *Queue) Watch(ctx context.Context, interval time.Duration) error {
	interval = cmp.Or(interval, SyncIntervalDefault)
	for loop.Sleep(ctx, loop.Jitter(interval, 0.1)) {
		if _, err := q.Sync(ctx); err != nil && ctx.Err() == nil {
			q.cfg.Logger.WarnContext(ctx, "sync operation queue", "error", err)
		}
	}
	return nil
}

// endSync ends a Sync: once none is between its read and its adopt, the ids settled meanwhile
// can be forgotten.
func (q *Queue) endSync() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.syncing--
	if q.syncing == 0 {
		clear(q.settledInSync)
	}
}

// fullSyncEvery: every this many Syncs one reads all the instance's rows instead of only ids
// above the highest seen. On PostgreSQL a sequence hands out ids before commit, so a row can
// commit after a higher id was already seen.
const fullSyncEvery = 15

// Sync loads this instance's rows that the in-memory queue does not know and returns how many.
func (q *Queue) Sync(ctx context.Context) (int, error) {
	q.mu.Lock()
	q.syncs++
	q.syncing++
	after := q.maxSeen
	if q.syncs%fullSyncEvery == 0 {
		after = 0
	}
	q.mu.Unlock()
	defer q.endSync()
	rows, err := q.listAfter(ctx, after)
	if err != nil {
		return 0, fmt.Errorf("sync operation queue: %w", err)
	}
	if q.afterSyncRead != nil {
		q.afterSyncRead()
	}
	n := q.adopt(rows)
	q.m.restored.Add(float64(n))
	return n, nil
}
