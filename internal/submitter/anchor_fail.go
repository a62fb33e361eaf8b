package submitter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/anchord/anchord/internal/store"
)

// failAnchor fails a pending anchor and gives its operations back to the queue, in tx. It
// reports whether it did: an anchor that is no longer pending (completed or failed by someone
// else) is left alone, because whoever moved it settled its operations.
func failAnchor(ctx context.Context, tx store.Executor, requeue RequeueFunc, logger *slog.Logger, seq int64, reason string) (bool, error) {
	a, err := tx.AnchorFailPending(ctx, store.AnchorFailParams{Seq: seq, Reason: reason})
	if errors.Is(err, store.ErrNotFound) {
		logger.WarnContext(ctx, "anchor to fail is not pending; its operations are not requeued again", "anchor_seq", seq, "reason", reason)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := requeue(ctx, tx, a); err != nil {
		return false, fmt.Errorf("give the operations of anchor %d back to the queue: %w", seq, err)
	}
	return true, nil
}
