package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// OpQueueTaskTouch implements store.Executor.
func (e executor) OpQueueTaskTouch(ctx context.Context, instanceID string) error {
	if _, err := e.q.Exec(ctx, qOpQueueTaskTouch, instanceID); err != nil {
		return fmt.Errorf("touch task entry of %s: %w", instanceID, err)
	}
	return nil
}

// OpQueueTaskDelete implements store.Executor.
func (e executor) OpQueueTaskDelete(ctx context.Context, instanceID string) error {
	if _, err := e.q.Exec(ctx, qOpQueueTaskDelete, instanceID); err != nil {
		return fmt.Errorf("delete task entry of %s: %w", instanceID, err)
	}
	return nil
}

// OpQueueTaskCheck implements store.Executor.
func (e executor) OpQueueTaskCheck(ctx context.Context, instanceID string) error {
	var one int
	err := e.q.QueryRow(ctx, qOpQueueTaskCheck, instanceID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("task entry of %s: %w", instanceID, store.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("task entry of %s: %w", instanceID, err)
	}
	return nil
}

// OpQueueTaskTakeOver implements store.Executor.
func (e executor) OpQueueTaskTakeOver(ctx context.Context, expiration time.Duration, except string) ([]string, error) {
	rows, err := e.q.Query(ctx, qOpQueueTaskTakeOver, expiration.Microseconds(), except)
	if err != nil {
		return nil, fmt.Errorf("take over expired task entries: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("take over expired task entries: %w", err)
	}
	return out, nil
}

// OpQueueOrphans implements store.Executor.
func (e executor) OpQueueOrphans(ctx context.Context, limit int, exceptOwner string) ([]store.QueuedOp, error) {
	rows, err := e.q.Query(ctx, qOpQueueOrphans, limit, exceptOwner)
	if err != nil {
		return nil, fmt.Errorf("list orphaned operations: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanQueuedOp)
	if err != nil {
		return nil, fmt.Errorf("list orphaned operations: %w", err)
	}
	return out, nil
}

// OpQueueTaskRefresh implements store.Executor.
func (e executor) OpQueueTaskRefresh(ctx context.Context, instanceID string) error {
	tag, err := e.q.Exec(ctx, qOpQueueTaskRefresh, instanceID)
	if err != nil {
		return fmt.Errorf("refresh task entry of %s: %w", instanceID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("refresh task entry of %s: %w", instanceID, store.ErrLeaseLost)
	}
	return nil
}
