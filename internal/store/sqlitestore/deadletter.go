package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

// DeadLetterInsert implements store.Executor.
func (e executor) DeadLetterInsert(ctx context.Context, d store.DeadLetter) (int64, error) {
	var id int64
	if err := e.w.QueryRowContext(ctx, qDeadLetterInsert, d.Kind, d.Ref, d.Topic, d.Payload, d.Reason,
		d.Attempts, historyJSON(d.History), nowMicros()).Scan(&id); err != nil {
		return 0, fmt.Errorf("park %s %s: %w", d.Kind, d.Ref, err)
	}
	return id, nil
}

// DeadLetterList implements store.Executor.
func (e executor) DeadLetterList(ctx context.Context, p store.DeadLetterListParams) ([]store.DeadLetter, error) {
	rows, err := e.r.QueryContext(ctx, qDeadLetterList, p.Kind, p.Kind, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	var out []store.DeadLetter
	for rows.Next() {
		d, err := scanDeadLetter(rows)
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// DeadLetterCountByKind implements store.Executor.
func (e executor) DeadLetterCountByKind(ctx context.Context) (map[string]int64, error) {
	rows, err := e.r.QueryContext(ctx, qDeadLetterCountByKind)
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, fmt.Errorf("count dead letters: %w", err)
		}
		out[kind] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	return out, nil
}

// DeadLetterGet implements store.Executor.
func (e executor) DeadLetterGet(ctx context.Context, id int64) (store.DeadLetter, error) {
	d, err := scanDeadLetter(e.r.QueryRowContext(ctx, qDeadLetterGet, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, fmt.Errorf("get dead letter %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("get dead letter %d: %w", id, err)
	}
	return d, nil
}

// DeadLetterDelete implements store.Executor.
func (e executor) DeadLetterDelete(ctx context.Context, id int64) error {
	res, err := e.w.ExecContext(ctx, qDeadLetterDelete, id)
	if err != nil {
		return fmt.Errorf("delete dead letter %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete dead letter %d: %w", id, store.ErrNotFound)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func scanDeadLetter(r scanner) (store.DeadLetter, error) {
	var d store.DeadLetter
	var hist string
	var created int64
	err := r.Scan(&d.ID, &d.Kind, &d.Ref, &d.Topic, &d.Payload, &d.Reason, &d.Attempts, &hist, &created)
	d.History = parseHistory(hist)
	d.CreatedAt = fromMicros(created)
	return d, err
}
