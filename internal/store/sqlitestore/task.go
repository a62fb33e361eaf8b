package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// clock returns the statement's time in microseconds: the test's override or this process's
// clock, which is the database clock of an embedded store.
func clock(now *time.Time) int64 {
	if now != nil {
		return micros(*now)
	}
	return nowMicros()
}

// TaskPermitAcquire implements store.Executor.
func (e executor) TaskPermitAcquire(ctx context.Context, p store.TaskPermitAcquireParams) (store.TaskPermit, bool, error) {
	permit, err := scanTaskPermit(e.w.QueryRowContext(ctx, qTaskPermitAcquire,
		p.TaskID, p.Holder, p.Term, clock(p.Now), p.StaleAfter.Microseconds()))
	if errors.Is(err, sql.ErrNoRows) {
		return store.TaskPermit{}, false, nil
	}
	if err != nil {
		return store.TaskPermit{}, false, fmt.Errorf("acquire permit of task %s: %w", p.TaskID, err)
	}
	return permit, true, nil
}

// TaskPermitStart implements store.Executor.
func (e executor) TaskPermitStart(ctx context.Context, p store.TaskPermitStartParams) (store.TaskPermit, bool, error) {
	permit, err := scanTaskPermit(e.w.QueryRowContext(ctx, qTaskPermitStart,
		p.TaskID, p.Holder, p.Term, clock(p.Now), p.Interval.Microseconds()))
	if err == nil {
		return permit, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.TaskPermit{}, false, fmt.Errorf("start task %s: %w", p.TaskID, err)
	}
	// Not started. The decision was the UPDATE's; this read only tells the caller why. It
	// reads through the writer so that it sees the same state inside and outside a transaction.
	permit, err = scanTaskPermit(e.w.QueryRowContext(ctx, qTaskPermitGet, p.TaskID))
	if errors.Is(err, sql.ErrNoRows) || err == nil && (permit.Holder != p.Holder || permit.Term != p.Term) {
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

func (e executor) fencedPermitWrite(ctx context.Context, what, query string, p store.TaskPermitFence) error {
	res, err := e.w.ExecContext(ctx, query, p.TaskID, p.Holder, p.Term, clock(p.Now))
	if err != nil {
		return fmt.Errorf("%s permit of task %s: %w", what, p.TaskID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s permit of task %s under term %d: %w", what, p.TaskID, p.Term, store.ErrLeaseLost)
	}
	return nil
}

// TaskPermitGet implements store.Executor.
func (e executor) TaskPermitGet(ctx context.Context, taskID string) (store.TaskPermit, error) {
	permit, err := scanTaskPermit(e.r.QueryRowContext(ctx, qTaskPermitGet, taskID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.TaskPermit{}, fmt.Errorf("get permit of task %s: %w", taskID, store.ErrNotFound)
	}
	if err != nil {
		return store.TaskPermit{}, fmt.Errorf("get permit of task %s: %w", taskID, err)
	}
	return permit, nil
}

func scanTaskPermit(r scanner) (store.TaskPermit, error) {
	var p store.TaskPermit
	var updated int64
	var started, last sql.NullInt64
	if err := r.Scan(&p.TaskID, &p.Holder, &p.PreviousHolder, &p.Term, &p.Status, &updated, &started, &last); err != nil {
		return store.TaskPermit{}, err
	}
	p.UpdatedAt = fromMicros(updated)
	if started.Valid {
		p.RunStartedAt = fromMicros(started.Int64)
	}
	if last.Valid {
		p.LastRunAt = fromMicros(last.Int64)
	}
	return p, nil
}

// ExpiredDeleteMany implements store.Executor.
func (e executor) ExpiredDeleteMany(ctx context.Context, p store.ExpiredDeleteParams) (int64, error) {
	if err := store.CheckExpiryTable(p.Table, p.Column); err != nil {
		return 0, fmt.Errorf("delete expired rows: %w", err)
	}
	query := fmt.Sprintf(qExpiredDelete, `"`+p.Table+`"`, `"`+p.Column+`"`)
	res, err := e.w.ExecContext(ctx, query, clock(p.Now), p.Limit)
	if err != nil {
		return 0, fmt.Errorf("delete expired rows of %s: %w", p.Table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("delete expired rows of %s: %w", p.Table, err)
	}
	return n, nil
}

// OpQueueParkExpired implements store.Executor, in one write transaction (the caller's, if it
// is in one).
func (e executor) OpQueueParkExpired(ctx context.Context, p store.OpQueueParkExpiredParams) ([]string, error) {
	now := clock(p.Now)
	var refs []string
	err := e.batch(ctx, func(tx *sql.Tx) error {
		refs = nil
		rows, err := tx.QueryContext(ctx, qOpQueueExpiredIDs, now, p.Limit)
		if err != nil {
			return err
		}
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		idsJSON, _ := json.Marshal(ids)
		copied, err := tx.QueryContext(ctx, qOpQueueParkCopy, string(idsJSON), store.DeadLetterOperation,
			store.DeadLetterReasonExpired, now)
		if err != nil {
			return err
		}
		for copied.Next() {
			var ref string
			if err := copied.Scan(&ref); err != nil {
				copied.Close()
				return err
			}
			refs = append(refs, ref)
		}
		copied.Close()
		if err := copied.Err(); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, qOpQueueParkDelete, string(idsJSON))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != int64(len(ids)) || len(refs) != len(ids) {
			return fmt.Errorf("copied %d and deleted %d of %d rows", len(refs), n, len(ids))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("park expired operations: %w", err)
	}
	return refs, nil
}
