package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// AnchorClockGet implements store.Executor.
func (e executor) AnchorClockGet(ctx context.Context) (store.AnchorClock, error) {
	var last, written *time.Time
	if err := e.q.QueryRow(ctx, qAnchorClockGet).Scan(&last, &written); err != nil {
		return store.AnchorClock{}, fmt.Errorf("read anchor clock: %w", interpretError(err))
	}
	var c store.AnchorClock
	if last != nil && written != nil {
		c = store.AnchorClock{Last: last.UTC(), WrittenAt: written.UTC()}
	}
	return c, nil
}

// AnchorClockSet implements store.Executor.
func (e executor) AnchorClockSet(ctx context.Context, c store.AnchorClock) error {
	tag, err := e.q.Exec(ctx, qAnchorClockSet, c.Last.Truncate(time.Microsecond), c.WrittenAt.Truncate(time.Microsecond))
	if err != nil {
		return fmt.Errorf("set anchor clock: %w", interpretError(err))
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("set anchor clock: %w", store.ErrNotFound)
	}
	return nil
}
