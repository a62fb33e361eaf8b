package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// OpQueueUpsertMany implements store.Executor with one statement over arrays.
func (e executor) OpQueueUpsertMany(ctx context.Context, ops []store.OpQueueInsertParams) ([]int64, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	n := len(ops)
	opIDs, suffixes, types, instances, hist := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	reqs := make([][]byte, n)
	attempts := make([]int32, n)
	avail := make([]*time.Time, n)
	lifespans := make([]int64, n)
	pos := make(map[string]int, n)
	for i, op := range ops {
		opIDs[i], suffixes[i], types[i], instances[i] = op.OpID, op.Suffix, op.Type, op.InstanceID
		reqs[i], attempts[i], hist[i] = op.Request, int32(op.Attempts), historyJSON(op.History)
		if !op.AvailableAt.IsZero() {
			t := op.AvailableAt
			avail[i] = &t
		}
		lifespans[i] = op.Lifespan.Microseconds()
		pos[op.OpID] = i
	}
	rows, err := e.q.Query(ctx, qOpQueueUpsert, opIDs, suffixes, types, reqs, instances, attempts, hist, avail, lifespans)
	if err != nil {
		return nil, fmt.Errorf("queue %d operations: %w", n, interpretError(err))
	}
	ids := make([]int64, n)
	var id int64
	var opID string
	_, err = pgx.ForEachRow(rows, []any{&id, &opID}, func() error {
		ids[pos[opID]] = id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue %d operations: %w", n, interpretError(err))
	}
	return ids, nil
}

// OpQueueList implements store.Executor.
func (e executor) OpQueueList(ctx context.Context, p store.OpQueueListParams) ([]store.QueuedOp, error) {
	rows, err := e.q.Query(ctx, qOpQueueList, p.InstanceID, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list queued operations: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanQueuedOp)
	if err != nil {
		return nil, fmt.Errorf("list queued operations: %w", err)
	}
	return out, nil
}

// scanQueuedOp reads an op_queue row selected with all columns in table order.
func scanQueuedOp(r pgx.CollectableRow) (store.QueuedOp, error) {
	var q store.QueuedOp
	var hist []byte
	err := r.Scan(&q.ID, &q.OpID, &q.Suffix, &q.Type, &q.Request, &q.InstanceID, &q.Attempts, &hist,
		&q.EnqueuedAt, &q.AvailableAt, &q.ExpiresAt)
	q.History = parseHistory(hist)
	q.EnqueuedAt, q.AvailableAt, q.ExpiresAt = q.EnqueuedAt.UTC(), q.AvailableAt.UTC(), q.ExpiresAt.UTC()
	return q, err
}

// OpQueueDeleteMany implements store.Executor.
func (e executor) OpQueueDeleteMany(ctx context.Context, p store.OpQueueDeleteParams) (int64, error) {
	tag, err := e.q.Exec(ctx, qOpQueueDelete, p.IDs, p.InstanceID)
	if err != nil {
		return 0, fmt.Errorf("delete %d queued operations: %w", len(p.IDs), err)
	}
	return tag.RowsAffected(), nil
}

// OpQueueRetry implements store.Executor.
func (e executor) OpQueueRetry(ctx context.Context, p store.OpQueueRetryParams) error {
	tag, err := e.q.Exec(ctx, qOpQueueRetry, p.Attempts, historyJSON(p.History), p.AvailableAt, p.ID, p.InstanceID)
	if err != nil {
		return fmt.Errorf("record retry of operation %d: %w", p.ID, err)
	}
	if tag.RowsAffected() == 0 {
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

func parseHistory(b []byte) []string {
	var h []string
	_ = json.Unmarshal(b, &h)
	return h
}

// OpQueueOwnedIDs implements store.Executor.
func (e executor) OpQueueOwnedIDs(ctx context.Context, p store.OpQueueDeleteParams) (map[int64]bool, error) {
	out := map[int64]bool{}
	rows, err := e.q.Query(ctx, qOpQueueOwned, p.InstanceID, p.IDs)
	if err != nil {
		return nil, fmt.Errorf("owned operations: %w", err)
	}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { out[id] = true; return nil }); err != nil {
		return nil, fmt.Errorf("owned operations: %w", err)
	}
	return out, nil
}
