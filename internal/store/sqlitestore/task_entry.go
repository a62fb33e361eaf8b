package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// OpQueueTaskTouch implements store.Executor.
func (e executor) OpQueueTaskTouch(ctx context.Context, instanceID string) error {
	if _, err := e.w.ExecContext(ctx, qOpQueueTaskTouch, instanceID, nowMicros()); err != nil {
		return fmt.Errorf("touch task entry of %s: %w", instanceID, err)
	}
	return nil
}

// OpQueueTaskDelete implements store.Executor.
func (e executor) OpQueueTaskDelete(ctx context.Context, instanceID string) error {
	if _, err := e.w.ExecContext(ctx, qOpQueueTaskDelete, instanceID); err != nil {
		return fmt.Errorf("delete task entry of %s: %w", instanceID, err)
	}
	return nil
}

// OpQueueTaskCheck implements store.Executor. Inside a write transaction SQLite's single writer
// already excludes a concurrent take-over.
func (e executor) OpQueueTaskCheck(ctx context.Context, instanceID string) error {
	var one int
	err := e.w.QueryRowContext(ctx, qOpQueueTaskCheck, instanceID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("task entry of %s: %w", instanceID, store.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("task entry of %s: %w", instanceID, err)
	}
	return nil
}

// OpQueueTaskTakeOver implements store.Executor.
func (e executor) OpQueueTaskTakeOver(ctx context.Context, expiration time.Duration, except string) ([]string, error) {
	rows, err := e.w.QueryContext(ctx, qOpQueueTaskTakeOver, nowMicros()-expiration.Microseconds(), except)
	if err != nil {
		return nil, fmt.Errorf("take over expired task entries: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("take over expired task entries: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("take over expired task entries: %w", err)
	}
	return out, nil
}

// OpQueueOrphans implements store.Executor.
func (e executor) OpQueueOrphans(ctx context.Context, limit int, exceptOwner string) ([]store.QueuedOp, error) {
	rows, err := e.r.QueryContext(ctx, qOpQueueOrphans, exceptOwner, limit)
	if err != nil {
		return nil, fmt.Errorf("list orphaned operations: %w", err)
	}
	out, err := scanQueuedOps(rows)
	if err != nil {
		return nil, fmt.Errorf("list orphaned operations: %w", err)
	}
	return out, nil
}

// OpQueueTaskRefresh implements store.Executor.
func (e executor) OpQueueTaskRefresh(ctx context.Context, instanceID string) error {
	res, err := e.w.ExecContext(ctx, qOpQueueTaskRefresh, nowMicros(), instanceID)
	if err != nil {
		return fmt.Errorf("refresh task entry of %s: %w", instanceID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("refresh task entry of %s: %w", instanceID, store.ErrLeaseLost)
	}
	return nil
}
