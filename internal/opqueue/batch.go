package opqueue

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// Batch is a set of operations removed from the queue for one Sidetree batch. Exactly one of
// the following settles every operation in it: Return (not used after all), Ack followed by
// Committed (anchored), Nack (the batch failed), Park (this operation can never be anchored).
type Batch struct {
	q   *Queue
	ops []*Op
}

// Ops returns the operations of the batch, in queue order.
func (b *Batch) Ops() []Op {
	out := make([]Op, len(b.ops))
	for i, op := range b.ops {
		out[i] = *op
	}
	return out
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// Return gives back the operations after the first keep, untouched (the batch writer cut a
// smaller batch than it removed). They go back to their place in the queue.
func (b *Batch) Return(keep int) {
	if keep >= len(b.ops) {
		return
	}
	back := slices.Clone(b.ops[keep:])
	b.ops = b.ops[:keep]
	b.q.putBack(back)
}

// Ack records the batch's operations as anchored by anchor seq and deletes their rows, inside tx,
// the transaction that records the anchor. It fails with store.ErrLeaseLost when some rows are
// no longer this instance's (they were reposted after it was presumed dead), and with
// store.ErrConflict when another copy of an operation was anchored meanwhile: the caller must
// then roll back, so nothing is anchored twice.
func (b *Batch) Ack(ctx context.Context, tx store.Executor, seq int64) error {
	if b.q.fenced {
		if err := tx.OpQueueTaskCheck(ctx, b.q.cfg.InstanceID); err != nil {
			return fmt.Errorf("ack batch: %w", err)
		}
	}
	ids := make([]int64, len(b.ops))
	opIDs := make([]string, len(b.ops))
	for i, op := range b.ops {
		ids[i], opIDs[i] = op.ID, op.OpID
	}
	if b.q.dedup {
		if err := tx.AnchoredOpsInsert(ctx, seq, opIDs, b.q.cfg.Lifespan); err != nil {
			return fmt.Errorf("ack batch: %w", err)
		}
	}
	n, err := tx.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: b.q.cfg.InstanceID})
	if err != nil {
		return fmt.Errorf("ack batch: %w", err)
	}
	if n != int64(len(ids)) {
		return fmt.Errorf("ack batch: %d of %d operations are no longer ours: %w", int64(len(ids))-n, len(ids), store.ErrLeaseLost)
	}
	return nil
}

// DropAnchored removes from the batch, and from the queue, every operation that is already
// recorded as anchored — a second copy of an operation (a redelivered or reposted message). It
// returns how many it dropped.
func (b *Batch) DropAnchored(ctx context.Context) (int, error) {
	if !b.q.dedup {
		return 0, nil
	}
	opIDs := make([]string, len(b.ops))
	for i, op := range b.ops {
		opIDs[i] = op.OpID
	}
	anchored, err := b.q.st.AnchoredOpsFilter(ctx, opIDs)
	if err != nil || len(anchored) == 0 {
		return 0, err
	}
	var dup []int64
	keep := b.ops[:0]
	for _, op := range b.ops {
		if anchored[op.OpID] {
			dup = append(dup, op.ID)
			continue
		}
		keep = append(keep, op)
	}
	if _, err := b.q.st.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: dup, InstanceID: b.q.cfg.InstanceID}); err != nil {
		return 0, fmt.Errorf("drop anchored duplicates: %w", err)
	}
	clear(b.ops[len(keep):])
	b.ops = keep
	b.q.settle(dup...)
	b.q.m.duplicates.Add(float64(len(dup)))
	b.q.cfg.Logger.InfoContext(ctx, "dropped second copies of operations already anchored", "operations", len(dup))
	return len(dup), nil
}

// Reconcile drops from the batch, and from the queue, the operations whose rows are no longer
// this instance's: an expired operation the expiry task parked, or one another instance took (a
// redelivery, a take-over). It returns how many it dropped. An Ack that failed with
// store.ErrLeaseLost is followed by Reconcile, so the batch's other operations are not held back.
func (b *Batch) Reconcile(ctx context.Context) (int, error) {
	ids := make([]int64, len(b.ops))
	for i, op := range b.ops {
		ids[i] = op.ID
	}
	owned, err := b.q.st.OpQueueOwnedIDs(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: b.q.cfg.InstanceID})
	if err != nil {
		return 0, fmt.Errorf("reconcile batch: %w", err)
	}
	keep := b.ops[:0]
	var lost []int64
	for _, op := range b.ops {
		if owned[op.ID] {
			keep = append(keep, op)
			continue
		}
		lost = append(lost, op.ID)
	}
	clear(b.ops[len(keep):])
	b.ops = keep
	if len(lost) > 0 {
		b.q.settle(lost...)
		b.q.m.lost.Add(float64(len(lost)))
		b.q.cfg.Logger.WarnContext(ctx, "operations no longer owned here were dropped from memory", "operations", len(lost))
	}
	return len(lost), nil
}

// Committed settles the batch after the anchor transaction (with Ack) committed.
func (b *Batch) Committed() {
	b.q.settle(idsOf(b.ops)...)
	b.q.m.acked.Add(float64(len(b.ops)))
	b.ops = nil
}

// Suffixes returns the DID suffixes of the batch.
func (b *Batch) Suffixes() []string {
	out := make([]string, len(b.ops))
	for i, op := range b.ops {
		out[i] = op.Suffix
	}
	return out
}

// Nack records that the batch failed because of cause. Each operation is offered again after
// its backoff; one that has now failed Redelivery.MaxAttempts batches is parked in dead_letters
// instead. In a cluster too the operation stays in this instance's row while it waits — the
// delay lives in the database, not in a broker queue — so a broker crash cannot lose it, and
// if this instance dies the op-queue monitor reposts it.
// If the failure cannot even be recorded (the database is down), the operations stay queued
// in memory with the backoff, and their rows are untouched, so nothing is lost either way.
func (b *Batch) Nack(ctx context.Context, cause error) {
	if len(b.ops) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	now := b.q.cfg.NowFunc()
	reason := cause.Error()
	var retry, park []*Op
	for _, op := range b.ops {
		next := *op
		next.Attempts++
		next.History = appendHistory(op.History, fmt.Sprintf("attempt %d at %s: %s", next.Attempts, now.UTC().Format(time.RFC3339), reason))
		next.AvailableAt = now.Add(b.q.cfg.backoff(next.Attempts))
		if next.Attempts >= b.q.cfg.Redelivery.MaxAttempts {
			park = append(park, &next)
		} else {
			retry = append(retry, &next)
		}
	}
	err := b.q.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		for _, op := range retry {
			if err := tx.OpQueueRetry(ctx, store.OpQueueRetryParams{
				ID: op.ID, InstanceID: b.q.cfg.InstanceID, Attempts: op.Attempts, History: op.History, AvailableAt: op.AvailableAt,
			}); err != nil {
				return err
			}
		}
		return b.q.parkTx(ctx, tx, park, "max attempts reached: "+reason)
	})
	b.q.m.nacked.Add(float64(len(b.ops)))
	if err != nil {
		b.q.cfg.Logger.ErrorContext(ctx, "record failed batch; operations stay queued", "operations", len(b.ops), "error", err)
		// The rows are unchanged; keep every operation (none is parked) and retry after the
		// backoff.
		b.q.putBack(append(retry, park...))
		b.ops = nil
		return
	}
	b.q.afterPark(ctx, park, "max attempts reached: "+reason)
	b.q.putBack(retry)
	b.ops = nil
}

// Park dead-letters one operation of the batch at once, for a failure no retry can fix.
func (b *Batch) Park(ctx context.Context, opID string, reason string) error {
	i := slices.IndexFunc(b.ops, func(op *Op) bool { return op.OpID == opID })
	if i < 0 {
		return fmt.Errorf("park %s: not in this batch", opID)
	}
	op := b.ops[i]
	err := b.q.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		return b.q.parkTx(ctx, tx, []*Op{op}, reason)
	})
	if err != nil {
		return fmt.Errorf("park %s: %w", opID, err)
	}
	b.ops = slices.Delete(b.ops, i, i+1)
	b.q.afterPark(ctx, []*Op{op}, reason)
	return nil
}

// repost hands operations to repostFunc (a cluster instance giving back what it holds at
// shutdown) and deletes their rows here; it returns the operations that could not be reposted.
// An operation whose delete fails after a successful repost exists twice for a while; the
// consumer's upsert by operation id makes the second copy the same row.
func (q *Queue) repost(ctx context.Context, ops []*Op) []*Op {
	byDelay := map[time.Duration][]Op{}
	now := q.cfg.NowFunc()
	for _, op := range ops {
		d := max(op.AvailableAt.Sub(now), 0)
		byDelay[d] = append(byDelay[d], *op)
	}
	var local []*Op
	for delay, group := range byDelay {
		if err := q.repostFunc(ctx, group, delay); err != nil {
			q.cfg.Logger.WarnContext(ctx, "repost failed; retrying the operations here", "operations", len(group), "error", err)
			for i := range group {
				local = append(local, &group[i])
			}
			continue
		}
		ids := make([]int64, len(group))
		for i, op := range group {
			ids[i] = op.ID
		}
		if _, err := q.st.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: q.cfg.InstanceID}); err != nil {
			q.cfg.Logger.WarnContext(ctx, "delete reposted operations; the expiry task removes them", "operations", len(group), "error", err)
		}
		q.settle(ids...)
		q.m.reposted.Add(float64(len(group)))
	}
	return local
}

// parkTx moves operations from op_queue to dead_letters in tx.
func (q *Queue) parkTx(ctx context.Context, tx store.Executor, ops []*Op, reason string) error {
	if len(ops) == 0 {
		return nil
	}
	if q.fenced {
		if err := tx.OpQueueTaskCheck(ctx, q.cfg.InstanceID); err != nil {
			return err
		}
	}
	ids := make([]int64, len(ops))
	for i, op := range ops {
		if _, err := tx.DeadLetterInsert(ctx, store.DeadLetter{
			Kind: store.DeadLetterOperation, Ref: op.OpID, Payload: op.Request, Reason: reason,
			Attempts: op.Attempts, History: op.History,
		}); err != nil {
			return err
		}
		ids[i] = op.ID
	}
	n, err := tx.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: q.cfg.InstanceID})
	if err != nil {
		return err
	}
	if n != int64(len(ids)) {
		return fmt.Errorf("park: %d of %d operations are no longer ours: %w", int64(len(ids))-n, len(ids), store.ErrLeaseLost)
	}
	return nil
}

func (q *Queue) afterPark(ctx context.Context, ops []*Op, reason string) {
	if len(ops) == 0 {
		return
	}
	q.settle(idsOf(ops)...)
	q.m.deadLettered.Add(float64(len(ops)))
	keys := make([]store.DIDPendingKey, len(ops))
	for i, op := range ops {
		keys[i] = store.DIDPendingKey{Suffix: op.Suffix, OpID: op.OpID}
		q.cfg.Logger.WarnContext(ctx, "operation parked in dead letters", "op_id", op.OpID, "suffix", op.Suffix, "attempts", op.Attempts, "reason", reason)
	}
	if q.cfg.ReleaseFunc != nil {
		q.cfg.ReleaseFunc(keys)
	}
}

// maxHistory bounds the failure history kept per operation; the oldest lines go first.
const maxHistory = 20

func appendHistory(h []string, line string) []string {
	out := append(slices.Clone(h), line)
	if len(out) > maxHistory {
		out = out[len(out)-maxHistory:]
	}
	return out
}
