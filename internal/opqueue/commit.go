package opqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// Add queues an operation and returns once its row is committed.
func (q *Queue) Add(ctx context.Context, op NewOp) error {
	if q.Backlog() >= q.cfg.MaxBacklog {
		q.m.rejected.WithLabelValues("backlog").Inc()
		return ErrPushback
	}
	if op.OpID == "" {
		op.OpID = OpIDOf(op.Request)
	}
	return q.group(ctx, q.addReq(op, false))
}

// Take queues an operation delivered by the broker (cluster mode) and returns once its row is
// committed. Like Restore it keeps the operation's failure count and bypasses the backlog limit
// (the operation was accepted already); unlike Restore it shares the group committer with other
// deliveries, so the consumer pool costs one transaction per group, not one per message.
func (q *Queue) Take(ctx context.Context, ops ...NewOp) error {
	reqs := make([]addReq, len(ops))
	for i, op := range ops {
		if op.OpID == "" {
			op.OpID = OpIDOf(op.Request)
		}
		reqs[i] = q.addReq(op, true)
	}
	return q.group(ctx, reqs...)
}

func (q *Queue) addReq(op NewOp, restore bool) addReq {
	return addReq{
		op: store.OpQueueInsertParams{
			OpID: op.OpID, Suffix: op.Suffix, Type: op.Type, Request: op.Request,
			InstanceID: q.cfg.InstanceID, Lifespan: q.cfg.Lifespan, Attempts: op.Attempts, History: op.History,
		},
		parsed:  op.Parsed,
		restore: restore,
		at:      time.Now(),
		done:    make(chan error, 1),
	}
}

// group hands reqs to the group committer and waits for their outcome: nil only if every one
// was committed.
func (q *Queue) group(ctx context.Context, reqs ...addReq) error {
	handed := 0
	var err error
	for _, req := range reqs {
		select {
		case q.addCh <- req:
			handed++
			continue
		case <-q.stopped:
			err = ErrClosed
		case <-ctx.Done():
			err = fmt.Errorf("queue operation: %w", ctx.Err())
		}
		break
	}
	// The row may be committed: a durable operation must not be reported as failed.
	for _, req := range reqs[:handed] {
		if e := outcome(req.done, q.stopped); err == nil {
			err = e
		}
	}
	return err
}

// outcome waits for the result of a request handed to a loop that closes stopped when it has
// returned. Once handed over, the result is awaited even if the caller's context ends: the loop
// may complete it.
func outcome(done <-chan error, stopped <-chan struct{}) error {
	select {
	case err := <-done:
		return err
	case <-stopped:
		select {
		case err := <-done:
			return err
		default:
			return ErrClosed
		}
	}
}

// Run is the group committer. It writes queued Adds in batches until ctx is done, then commits
// whatever was already handed to it and returns.
func (q *Queue) Run(ctx context.Context) error {
	defer q.once.Do(func() { close(q.stopped) })
	batch := make([]addReq, 0, q.cfg.MaxCommit)
	last := 0 // size of the previous commit
	for {
		select {
		case <-ctx.Done():
			for {
				batch = q.drain(batch[:0])
				if len(batch) == 0 {
					return nil
				}
				q.commit(context.WithoutCancel(ctx), batch)
			}
		case r := <-q.addCh:
			batch = q.drain(append(batch[:0], r))
			if last > 1 && len(batch) < q.cfg.MaxCommit {
				batch = q.linger(batch)
			}
			last = len(batch)
			q.commit(ctx, batch)
		}
	}
}

// lingerTime is how long the committer waits for more operations when the previous commit
// carried several: under load, larger groups mean fewer commits and fewer rewrites of the same
// pages; idle, an operation is committed at once.
const lingerTime = time.Millisecond

// linger collects operations for up to lingerTime, up to MaxCommit.
func (q *Queue) linger(batch []addReq) []addReq {
	t := time.NewTimer(lingerTime)
	defer t.Stop()
	for len(batch) < q.cfg.MaxCommit {
		select {
		case r := <-q.addCh:
			batch = append(batch, r)
		case <-t.C:
			return batch
		}
	}
	return batch
}

// drain takes what is waiting without blocking, up to MaxCommit.
func (q *Queue) drain(batch []addReq) []addReq {
	for len(batch) < q.cfg.MaxCommit {
		select {
		case r := <-q.addCh:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

func (q *Queue) commit(ctx context.Context, batch []addReq) {
	// The same operation twice in one group (two clients racing with identical requests) is
	// written once, and both callers get that row's outcome.
	first := make(map[string]int, len(batch))
	params := make([]store.OpQueueInsertParams, 0, len(batch))
	for _, r := range batch {
		if _, dup := first[r.op.OpID]; !dup {
			first[r.op.OpID] = len(params)
			params = append(params, r.op)
		}
	}
	var ids []int64
	failpoint.Hit(failpoint.OpQueueBeforeCommit)
	err := q.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		var err error
		ids, err = tx.OpQueueUpsertMany(ctx, params)
		return err
	})
	q.m.commitSize.Observe(float64(len(batch)))
	if err != nil {
		q.cfg.Logger.ErrorContext(ctx, "queue operations", "operations", len(batch), "error", err)
		for _, r := range batch {
			r.done <- fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return
	}
	failpoint.Hit(failpoint.OpQueueAfterCommit)
	now := q.cfg.NowFunc()
	ops := make([]*Op, len(params))
	for i, p := range params {
		var parsed *sidetree.Operation
		for _, r := range batch {
			if r.op.OpID == p.OpID {
				parsed = r.parsed
				break
			}
		}
		ops[i] = &Op{
			ID: ids[i], OpID: p.OpID, Suffix: p.Suffix, Type: p.Type, Request: p.Request,
			Attempts: p.Attempts, History: p.History, EnqueuedAt: now, AvailableAt: now, Parsed: parsed,
		}
	}
	q.adopt(ops)
	for _, r := range batch {
		if r.restore {
			q.m.restored.Inc()
		} else {
			q.m.added.Inc()
			q.m.addLatency.Observe(time.Since(r.at).Seconds())
		}
		r.done <- nil
	}
}
