package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// OpQueueUpsertMany implements store.Executor.
func (e executor) OpQueueUpsertMany(ctx context.Context, ops []store.OpQueueInsertParams) ([]int64, error) {
	ids := make([]int64, len(ops))
	err := e.batch(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, qOpQueueUpsert)
		if err != nil {
			return err
		}
		defer stmt.Close()
		now := time.Now()
		for i, op := range ops {
			avail := op.AvailableAt
			if avail.IsZero() {
				avail = now
			}
			if err := stmt.QueryRowContext(ctx, op.OpID, op.Suffix, op.Type, op.Request, op.InstanceID,
				op.Attempts, historyJSON(op.History), micros(now), micros(avail), micros(now.Add(op.Lifespan)),
			).Scan(&ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue %d operations: %w", len(ops), interpretError(err))
	}
	return ids, nil
}

// OpQueueList implements store.Executor.
func (e executor) OpQueueList(ctx context.Context, p store.OpQueueListParams) ([]store.QueuedOp, error) {
	rows, err := e.r.QueryContext(ctx, qOpQueueList, p.InstanceID, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list queued operations: %w", err)
	}
	out, err := scanQueuedOps(rows)
	if err != nil {
		return nil, fmt.Errorf("list queued operations: %w", err)
	}
	return out, nil
}

// scanQueuedOps reads op_queue rows selected with all columns in table order, and closes rows.
func scanQueuedOps(rows *sql.Rows) ([]store.QueuedOp, error) {
	defer rows.Close()
	var out []store.QueuedOp
	for rows.Next() {
		var q store.QueuedOp
		var hist string
		var enq, avail, exp int64
		if err := rows.Scan(&q.ID, &q.OpID, &q.Suffix, &q.Type, &q.Request, &q.InstanceID, &q.Attempts, &hist, &enq, &avail, &exp); err != nil {
			return nil, err
		}
		q.History = parseHistory(hist)
		q.EnqueuedAt, q.AvailableAt, q.ExpiresAt = fromMicros(enq), fromMicros(avail), fromMicros(exp)
		out = append(out, q)
	}
	return out, rows.Err()
}

// OpQueueDeleteMany implements store.Executor, with one statement per chunk of ids.
func (e executor) OpQueueDeleteMany(ctx context.Context, p store.OpQueueDeleteParams) (int64, error) {
	var n int64
	err := e.batch(ctx, func(tx *sql.Tx) error {
		for start := 0; start < len(p.IDs); start += maxInList {
			chunk := p.IDs[start:min(start+maxInList, len(p.IDs))]
			args := make([]any, 0, len(chunk)+1)
			args = append(args, p.InstanceID)
			for _, id := range chunk {
				args = append(args, id)
			}
			res, err := tx.ExecContext(ctx, fmt.Sprintf(qOpQueueDeleteIn, placeholders(len(chunk))), args...)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += k
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete %d queued operations: %w", len(p.IDs), err)
	}
	return n, nil
}

// placeholders returns "?,?,…" for n values.
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// OpQueueRetry implements store.Executor.
func (e executor) OpQueueRetry(ctx context.Context, p store.OpQueueRetryParams) error {
	res, err := e.w.ExecContext(ctx, qOpQueueRetry, p.Attempts, historyJSON(p.History), micros(p.AvailableAt), p.ID, p.InstanceID)
	if err != nil {
		return fmt.Errorf("record retry of operation %d: %w", p.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record retry of operation %d: %w", p.ID, store.ErrLeaseLost)
	}
	return nil
}

func historyJSON(h []string) string {
	if len(h) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(h)
	return string(b)
}

func parseHistory(s string) []string {
	var h []string
	_ = json.Unmarshal([]byte(s), &h)
	return h
}

// OpQueueOwnedIDs implements store.Executor.
func (e executor) OpQueueOwnedIDs(ctx context.Context, p store.OpQueueDeleteParams) (map[int64]bool, error) {
	out := map[int64]bool{}
	for start := 0; start < len(p.IDs); start += maxInList {
		chunk := p.IDs[start:min(start+maxInList, len(p.IDs))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, p.InstanceID)
		for _, id := range chunk {
			args = append(args, id)
		}
		q := fmt.Sprintf(qOpQueueOwned, strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ","))
		rows, err := e.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("owned operations: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("owned operations: %w", err)
			}
			out[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("owned operations: %w", err)
		}
	}
	return out, nil
}
