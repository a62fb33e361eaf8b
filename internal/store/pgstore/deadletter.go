package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// DeadLetterInsert implements store.Executor.
func (e executor) DeadLetterInsert(ctx context.Context, d store.DeadLetter) (int64, error) {
	var id int64
	if err := e.q.QueryRow(ctx, qDeadLetterInsert, d.Kind, d.Ref, d.Topic, d.Payload, d.Reason, d.Attempts,
		historyJSON(d.History)).Scan(&id); err != nil {
		return 0, fmt.Errorf("park %s %s: %w", d.Kind, d.Ref, err)
	}
	return id, nil
}

// DeadLetterList implements store.Executor.
func (e executor) DeadLetterList(ctx context.Context, p store.DeadLetterListParams) ([]store.DeadLetter, error) {
	rows, err := e.q.Query(ctx, qDeadLetterList, p.Kind, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.DeadLetter, error) { return scanDeadLetter(r) })
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

// DeadLetterGet implements store.Executor.
func (e executor) DeadLetterGet(ctx context.Context, id int64) (store.DeadLetter, error) {
	d, err := scanDeadLetter(e.q.QueryRow(ctx, qDeadLetterGet, id))
	if err != nil {
		return d, fmt.Errorf("get dead letter %d: %w", id, interpretError(err))
	}
	return d, nil
}

// DeadLetterDelete implements store.Executor.
func (e executor) DeadLetterDelete(ctx context.Context, id int64) error {
	tag, err := e.q.Exec(ctx, qDeadLetterDelete, id)
	if err != nil {
		return fmt.Errorf("delete dead letter %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete dead letter %d: %w", id, store.ErrNotFound)
	}
	return nil
}

// DeadLetterCountByKind implements store.Executor.
func (e executor) DeadLetterCountByKind(ctx context.Context) (map[string]int64, error) {
	rows, err := e.q.Query(ctx, qDeadLetterCountByKind)
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

func scanDeadLetter(r pgx.Row) (store.DeadLetter, error) {
	var d store.DeadLetter
	var hist []byte
	err := r.Scan(&d.ID, &d.Kind, &d.Ref, &d.Topic, &d.Payload, &d.Reason, &d.Attempts, &hist, &d.CreatedAt)
	d.History = parseHistory(hist)
	d.CreatedAt = d.CreatedAt.UTC()
	return d, err
}
