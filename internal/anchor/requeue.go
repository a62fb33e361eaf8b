package anchor

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
)

// RequeueConfig configures the requeue of failed anchors.
type RequeueConfig struct {
	Profile sidetree.Profile
	Limits  batchfile.Limits
	// FetchFunc reads CAS content (cas.Store.FetchFunc).
	FetchFunc func(ctx context.Context) func(uri string, maxSize int) ([]byte, error)
	// InstanceID owns the requeued rows; its queue picks them up (opqueue.Queue.Watch).
	InstanceID string
	// Lifespan is op-queue-operation-lifespan.
	Lifespan time.Duration
}

// RequeueFunc returns the function that gives the operations of a failed anchor back to the
// operation queue, inside the transaction that fails the anchor (DESIGN.md durability chain,
// link 4): it reads the operations from the anchor's batch files — they are the operations — and
// queues each again under its id, and forgets that they were anchored, so they are not taken for
// duplicates. A crash before that transaction commits leaves the anchor pending and nothing
// requeued; after it, the anchor is failed and every operation is queued.
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
		ops := make([]store.OpQueueInsertParams, len(b.Operations))
		for i, op := range b.Operations {
			ops[i] = store.OpQueueInsertParams{
				OpID: opID(op.Request), Suffix: op.Suffix, Type: string(op.Type), Request: op.Request,
				InstanceID: cfg.InstanceID, Lifespan: cfg.Lifespan,
				History: []string{fmt.Sprintf("anchor %d (%s) failed at %s; queued again", a.Seq, a.AnchorString, time.Now().UTC().Format(time.RFC3339))},
			}
		}
		if err := tx.AnchoredOpsDeleteByAnchor(ctx, a.Seq); err != nil {
			return fmt.Errorf("requeue operations of anchor %d: %w", a.Seq, err)
		}
		if _, err := tx.OpQueueUpsertMany(ctx, ops); err != nil {
			return fmt.Errorf("requeue operations of anchor %d: %w", a.Seq, err)
		}
		return nil
	}
}

// opID is opqueue.OpIDOf, restated because a domain package does not import another: the hash
// of the canonical request, which the batch reader reconstructs byte for byte.
func opID(request []byte) string {
	sum := sha256.Sum256(request)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
