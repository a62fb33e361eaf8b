package pgstore

import (
	"context"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

const (
	qLogCheckpointGet     = `SELECT origin, checkpoint, size, rejected, updated_at FROM log_checkpoints WHERE origin = $1`
	qLogCheckpointAdvance = `INSERT INTO log_checkpoints (origin, checkpoint, size) VALUES ($1, $2, $3)
		ON CONFLICT (origin) DO UPDATE SET checkpoint = excluded.checkpoint, size = excluded.size,
			rejected = NULL, updated_at = now()
		WHERE log_checkpoints.size <= excluded.size`
	qLogCheckpointReject = `UPDATE log_checkpoints SET rejected = $1, updated_at = now() WHERE origin = $2`
	qLogCheckpointForget = `DELETE FROM log_checkpoints WHERE origin = $1`
)

// LogCheckpointGet implements store.Executor.
func (e executor) LogCheckpointGet(ctx context.Context, origin string) (store.LogCheckpoint, error) {
	var c store.LogCheckpoint
	var size int64
	err := e.q.QueryRow(ctx, qLogCheckpointGet, origin).Scan(&c.Origin, &c.Checkpoint, &size, &c.Rejected, &c.UpdatedAt)
	if err != nil {
		return store.LogCheckpoint{}, fmt.Errorf("get checkpoint of log %q: %w", origin, interpretError(err))
	}
	c.Size = uint64(size)
	return c, nil
}

// LogCheckpointAdvance implements store.Executor.
func (e executor) LogCheckpointAdvance(ctx context.Context, origin string, checkpoint []byte, size uint64) (bool, error) {
	tag, err := e.q.Exec(ctx, qLogCheckpointAdvance, origin, checkpoint, int64(size))
	if err != nil {
		return false, fmt.Errorf("advance checkpoint of log %q: %w", origin, interpretError(err))
	}
	return tag.RowsAffected() == 1, nil
}

// LogCheckpointReject implements store.Executor.
func (e executor) LogCheckpointReject(ctx context.Context, origin string, checkpoint []byte) error {
	tag, err := e.q.Exec(ctx, qLogCheckpointReject, checkpoint, origin)
	if err != nil {
		return fmt.Errorf("reject checkpoint of log %q: %w", origin, interpretError(err))
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("reject checkpoint of log %q: %w", origin, store.ErrNotFound)
	}
	return nil
}

// LogCheckpointForget implements store.Executor.
func (e executor) LogCheckpointForget(ctx context.Context, origin string) error {
	if _, err := e.q.Exec(ctx, qLogCheckpointForget, origin); err != nil {
		return fmt.Errorf("forget checkpoint of log %q: %w", origin, interpretError(err))
	}
	return nil
}
