package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

const (
	qLogCheckpointGet     = `SELECT origin, checkpoint, size, rejected, updated_at FROM log_checkpoints WHERE origin = ?`
	qLogCheckpointAdvance = `INSERT INTO log_checkpoints (origin, checkpoint, size, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (origin) DO UPDATE SET checkpoint = excluded.checkpoint, size = excluded.size,
			rejected = NULL, updated_at = excluded.updated_at
		WHERE log_checkpoints.size <= excluded.size`
	qLogCheckpointReject = `UPDATE log_checkpoints SET rejected = ?, updated_at = ? WHERE origin = ?`
	qLogCheckpointForget = `DELETE FROM log_checkpoints WHERE origin = ?`
)

// LogCheckpointGet implements store.Executor.
func (e executor) LogCheckpointGet(ctx context.Context, origin string) (store.LogCheckpoint, error) {
	var c store.LogCheckpoint
	var size, at int64
	err := e.r.QueryRowContext(ctx, qLogCheckpointGet, origin).Scan(&c.Origin, &c.Checkpoint, &size, &c.Rejected, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("get checkpoint of log %q: %w", origin, store.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("get checkpoint of log %q: %w", origin, err)
	}
	c.Size, c.UpdatedAt = uint64(size), fromMicros(at)
	return c, nil
}

// LogCheckpointAdvance implements store.Executor.
func (e executor) LogCheckpointAdvance(ctx context.Context, origin string, checkpoint []byte, size uint64) (bool, error) {
	res, err := e.w.ExecContext(ctx, qLogCheckpointAdvance, origin, checkpoint, int64(size), nowMicros())
	if err != nil {
		return false, fmt.Errorf("advance checkpoint of log %q: %w", origin, interpretError(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("advance checkpoint of log %q: %w", origin, err)
	}
	return n == 1, nil
}

// LogCheckpointReject implements store.Executor.
func (e executor) LogCheckpointReject(ctx context.Context, origin string, checkpoint []byte) error {
	res, err := e.w.ExecContext(ctx, qLogCheckpointReject, checkpoint, nowMicros(), origin)
	if err != nil {
		return fmt.Errorf("reject checkpoint of log %q: %w", origin, interpretError(err))
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("reject checkpoint of log %q: %w", origin, store.ErrNotFound)
	}
	return nil
}

// LogCheckpointForget implements store.Executor.
func (e executor) LogCheckpointForget(ctx context.Context, origin string) error {
	if _, err := e.w.ExecContext(ctx, qLogCheckpointForget, origin); err != nil {
		return fmt.Errorf("forget checkpoint of log %q: %w", origin, interpretError(err))
	}
	return nil
}
