package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// AnchoredOpsInsert implements store.Executor with multi-row statements.
func (e executor) AnchoredOpsInsert(ctx context.Context, seq int64, opIDs []string, keep time.Duration) error {
	err := e.batch(ctx, func(tx *sql.Tx) error {
		expires := nowMicros() + keep.Microseconds()
		for start := 0; start < len(opIDs); start += rowsPerInsert {
			chunk := opIDs[start:min(start+rowsPerInsert, len(opIDs))]
			args := make([]any, 0, 3*len(chunk))
			for _, id := range chunk {
				args = append(args, id, seq, expires)
			}
			q := fmt.Sprintf(qAnchoredOpInsert, strings.TrimSuffix(strings.Repeat("(?, ?, ?),", len(chunk)), ","))
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record %d anchored operations: %w", len(opIDs), interpretError(err))
	}
	return nil
}

// AnchoredOpsFilter implements store.Executor.
func (e executor) AnchoredOpsFilter(ctx context.Context, opIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	for start := 0; start < len(opIDs); start += maxInList {
		chunk := opIDs[start:min(start+maxInList, len(opIDs))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		q := fmt.Sprintf(qAnchoredOpsFilter, placeholders(len(chunk)))
		rows, err := e.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("find anchored operations: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("find anchored operations: %w", err)
			}
			out[id] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("find anchored operations: %w", err)
		}
	}
	return out, nil
}

// AnchoredOpsDeleteByAnchor implements store.Executor.
func (e executor) AnchoredOpsDeleteByAnchor(ctx context.Context, seq int64, opIDs []string) error {
	for start := 0; start < len(opIDs); start += maxInList {
		chunk := opIDs[start:min(start+maxInList, len(opIDs))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, seq)
		for _, id := range chunk {
			args = append(args, id)
		}
		q := fmt.Sprintf(qAnchoredOpsDeleteByAnchor, placeholders(len(chunk)))
		if _, err := e.w.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("forget operations of anchor %d: %w", seq, err)
		}
	}
	return nil
}
