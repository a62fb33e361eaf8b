package federation

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/anchord/anchord/internal/store"
)

// RetryDeadLetter puts a parked delivery or inbox activity (a dead letter of kind activity) back
// to work, inside tx, the transaction that deletes the dead letter: the delivery is pending
// again and the inbox row queued, both due at once with their attempts reset. The loops are
// woken once tx commits. It is the dead-letter service's retry path for the kind.
func (s *Service) RetryDeadLetter(ctx context.Context, tx store.Executor, d store.DeadLetter) error {
	if d.Kind != store.DeadLetterActivity {
		return fmt.Errorf("retry dead letter %d: kind %q is not %q", d.ID, d.Kind, store.DeadLetterActivity)
	}
	switch {
	case strings.HasPrefix(d.Ref, deliveryRefPrefix):
		id, err := strconv.ParseInt(strings.TrimPrefix(d.Ref, deliveryRefPrefix), 10, 64)
		if err != nil {
			return fmt.Errorf("retry dead letter %d: ref %q: %w", d.ID, d.Ref, err)
		}
		if err := tx.ActivityDeliveryRearm(ctx, id); err != nil {
			return fmt.Errorf("retry dead letter %d: %w", d.ID, err)
		}
		store.OnCommit(ctx, func() { s.wake.outbox(d.Ref) })
	case strings.HasPrefix(d.Ref, inboxRefPrefix):
		seq, err := strconv.ParseInt(strings.TrimPrefix(d.Ref, inboxRefPrefix), 10, 64)
		if err != nil {
			return fmt.Errorf("retry dead letter %d: ref %q: %w", d.ID, d.Ref, err)
		}
		if err := tx.ActivityInboxRearm(ctx, seq); err != nil {
			return fmt.Errorf("retry dead letter %d: %w", d.ID, err)
		}
		store.OnCommit(ctx, func() { s.wake.inbox(d.Ref) })
	default:
		return fmt.Errorf("retry dead letter %d: ref %q names no delivery or inbox activity", d.ID, d.Ref)
	}
	return nil
}
