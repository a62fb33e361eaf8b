package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// TaskPermitAcquire implements store.Executor.
func (e executor) TaskPermitAcquire(ctx context.Context, p store.TaskPermitAcquireParams) (store.TaskPermit, bool, error) {
	permit, err := scanTaskPermit(e.q.QueryRow(ctx, qTaskPermitAcquire,
		p.TaskID, p.Holder, p.Term, p.Now, p.StaleAfter.Microseconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TaskPermit{}, false, nil
	}
	if err != nil {
		return store.TaskPermit{}, false, fmt.Errorf("acquire permit of task %s: %w", p.TaskID, err)
	}
	return permit, true, nil
}

// TaskPermitStart implements store.Executor.
func (e executor) TaskPermitStart(ctx context.Context, p store.TaskPermitStartParams) (store.TaskPermit, bool, error) {
	permit, err := scanTaskPermit(e.q.QueryRow(ctx, qTaskPermitStart, p.TaskID, p.Holder, p.Term, p.Now, p.Interval.Microseconds()))
	if err == nil {
		return permit, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.TaskPermit{}, false, fmt.Errorf("start task %s: %w", p.TaskID, err)
	}
	// Not started. The decision was the UPDATE's; this read only tells the caller why.
	permit, err = e.TaskPermitGet(ctx, p.TaskID)
	if errors.Is(err, store.ErrNotFound) || err == nil && (permit.Holder != p.Holder || permit.Term != p.Term) {
		return store.TaskPermit{}, false, fmt.Errorf("start task %s under term %d: %w", p.TaskID, p.Term, store.ErrLeaseLost)
	}
	if err != nil {
		return store.TaskPermit{}, false, fmt.Errorf("start task %s: %w", p.TaskID, err)
	}
	return permit, false, nil
}

// TaskPermitRefresh implements store.Executor.
func (e executor) TaskPermitRefresh(ctx context.Context, p store.TaskPermitFence) error {
	return e.fencedPermitWrite(ctx, "refresh", qTaskPermitRefresh, p)
}

// TaskPermitFinish implements store.Executor.
func (e executor) TaskPermitFinish(ctx context.Context, p store.TaskPermitFence) error {
	return e.fencedPermitWrite(ctx, "finish", qTaskPermitFinish, p)
}

// TaskPermitRelease implements store.Executor.
func (e executor) TaskPermitRelease(ctx context.Context, p store.TaskPermitFence) error {
	return e.fencedPermitWrite(ctx, "release", qTaskPermitRelease, p)
}

func (e executor) fencedPermitWrite(ctx context.Context, what, sql string, p store.TaskPermitFence) error {
	tag, err := e.q.Exec(ctx, sql, p.TaskID, p.Holder, p.Term, p.Now)
	if err != nil {
		return fmt.Errorf("%s permit of task %s: %w", what, p.TaskID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s permit of task %s under term %d: %w", what, p.TaskID, p.Term, store.ErrLeaseLost)
	}
	return nil
}

// TaskPermitGet implements store.Executor.
func (e executor) TaskPermitGet(ctx context.Context, taskID string) (store.TaskPermit, error) {
	permit, err := scanTaskPermit(e.q.QueryRow(ctx, qTaskPermitGet, taskID))
	if err != nil {
		return store.TaskPermit{}, fmt.Errorf("get permit of task %s: %w", taskID, interpretError(err))
	}
	return permit, nil
}

func scanTaskPermit(r pgx.Row) (store.TaskPermit, error) {
	var p store.TaskPermit
	var started, last *time.Time
	if err := r.Scan(&p.TaskID, &p.Holder, &p.PreviousHolder, &p.Term, &p.Status, &p.UpdatedAt, &started, &last); err != nil {
		return store.TaskPermit{}, err
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	if started != nil {
		p.RunStartedAt = started.UTC()
	}
	if last != nil {
		p.LastRunAt = last.UTC()
	}
	return p, nil
}

// ExpiredDeleteMany implements store.Executor.
func (e executor) ExpiredDeleteMany(ctx context.Context, p store.ExpiredDeleteParams) (int64, error) {
	if err := store.CheckExpiryTable(p.Table, p.Column); err != nil {
		return 0, fmt.Errorf("delete expired rows: %w", err)
	}
	sql := fmt.Sprintf(qExpiredDelete, pgx.Identifier{p.Table}.Sanitize(), pgx.Identifier{p.Column}.Sanitize())
	tag, err := e.q.Exec(ctx, sql, p.Limit, p.Now)
	if err != nil {
		return 0, fmt.Errorf("delete expired rows of %s: %w", p.Table, err)
	}
	return tag.RowsAffected(), nil
}

// OpQueueParkExpired implements store.Executor.
func (e executor) OpQueueParkExpired(ctx context.Context, p store.OpQueueParkExpiredParams) ([]string, error) {
	rows, err := e.q.Query(ctx, qOpQueueParkExpired, p.Limit, p.Now, store.DeadLetterOperation, store.DeadLetterReasonExpired)
	if err != nil {
		return nil, fmt.Errorf("park expired operations: %w", err)
	}
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("park expired operations: %w", err)
	}
	return refs, nil
}
