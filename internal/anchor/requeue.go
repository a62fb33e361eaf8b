package anchor

import (
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
)

// GiveBackTxFunc queues the operations of failed anchor seq again inside tx, the transaction
// that fails the anchor (opqueue.Queue.GiveBackTx, or opqueue.Rows.GiveBackTx for a queue in
// another process).
type GiveBackTxFunc func(ctx context.Context, tx store.Executor, seq int64, ops []opqueue.NewOp) error

// RequeueConfig configures the requeue of failed anchors.
type RequeueConfig struct {
	Profile sidetree.Profile
	Limits  batchfile.Limits
	// FetchFunc reads CAS content (cas.Store.FetchFunc).
	FetchFunc func(ctx context.Context) func(uri string, maxSize int) ([]byte, error)
	// GiveBackTxFunc is the queue that takes the operations back.
	GiveBackTxFunc GiveBackTxFunc
}

// RequeueFunc returns the function that gives the operations of a failed anchor back to the
// operation queue, inside the transaction that fails the anchor (the durability chain's link
// 4): it reads the operations from the anchor's batch files — they are the operations — and
// hands them to the queue under their ids. A crash before that transaction commits leaves the
// anchor pending and nothing requeued; after it, the anchor is failed and every operation is
// queued.
func RequeueFunc(cfg RequeueConfig) func(ctx context.Context, tx store.Executor, a store.Anchor) error {
	return func(ctx context.Context, tx store.Executor, a store.Anchor) error {
		b, err := batchfile.Read(cfg.Profile, a.AnchorString, cfg.FetchFunc(ctx), cfg.Limits)
		if err != nil {
			return fmt.Errorf("requeue operations of anchor %d: %w", a.Seq, err)
		}
		if b.ProvisionalErr != nil {
			// Our own batch's files are unreadable: requeueing only the core operations would
			// silently lose the updates, so refuse and let the caller retry.
			return fmt.Errorf("requeue operations of anchor %d: %w", a.Seq, b.ProvisionalErr)
		}
		note := fmt.Sprintf("anchor %d (%s) failed at %s; queued again", a.Seq, a.AnchorString, time.Now().UTC().Format(time.RFC3339))
		ops := make([]opqueue.NewOp, len(b.Operations))
		for i, op := range b.Operations {
			ops[i] = opqueue.NewOp{Suffix: op.Suffix, Type: string(op.Type), Request: op.Request, History: []string{note}}
		}
		if err := cfg.GiveBackTxFunc(ctx, tx, a.Seq, ops); err != nil {
			return fmt.Errorf("requeue operations of anchor %d: %w", a.Seq, err)
		}
		return nil
	}
}
