package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnchoredOpsInsert implements store.Executor.
func (e executor) AnchoredOpsInsert(ctx context.Context, seq int64, opIDs []string, keep time.Duration) error {
	if len(opIDs) == 0 {
		return nil
	}
	if _, err := e.q.Exec(ctx, qAnchoredOpsInsert, opIDs, seq, keep.Microseconds()); err != nil {
		return fmt.Errorf("record %d anchored operations: %w", len(opIDs), interpretError(err))
	}
	return nil
}

// AnchoredOpsFilter implements store.Executor.
func (e executor) AnchoredOpsFilter(ctx context.Context, opIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(opIDs) == 0 {
		return out, nil
	}
	rows, err := e.q.Query(ctx, qAnchoredOpsFilter, opIDs)
	if err != nil {
		return nil, fmt.Errorf("find anchored operations: %w", err)
	}
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { out[id] = true; return nil }); err != nil {
		return nil, fmt.Errorf("find anchored operations: %w", err)
	}
	return out, nil
}

// AnchoredOpsDeleteByAnchor implements store.Executor.
func (e executor) AnchoredOpsDeleteByAnchor(ctx context.Context, seq int64, opIDs []string) error {
	if len(opIDs) == 0 {
		return nil
	}
	if _, err := e.q.Exec(ctx, qAnchoredOpsDeleteByAnchor, seq, opIDs); err != nil {
		return fmt.Errorf("forget operations of anchor %d: %w", seq, err)
	}
	return nil
}
