package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

const (
	qCosignedCheckpointCols      = `origin, origin_hash, size, root_hash, checkpoint, updated_at`
	qCosignedCheckpointGet       = `SELECT ` + qCosignedCheckpointCols + ` FROM cosigned_checkpoints WHERE origin = ?`
	qCosignedCheckpointGetByHash = `SELECT ` + qCosignedCheckpointCols + ` FROM cosigned_checkpoints WHERE origin_hash = ?`
	qCosignedCheckpointInsert    = `INSERT INTO cosigned_checkpoints (origin, origin_hash, size, root_hash, checkpoint, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	// One writer at a time: the statement is the compare and the swap.
	qCosignedCheckpointUpdate = `UPDATE cosigned_checkpoints SET size = ?, root_hash = ?, checkpoint = ?, updated_at = ?
		WHERE origin = ? AND origin_hash = ? AND size = ? AND root_hash = ?`
)

// CosignedCheckpointGet implements store.Executor.
func (e executor) CosignedCheckpointGet(ctx context.Context, origin string) (store.CosignedCheckpoint, error) {
	c, err := e.scanCosignedCheckpoint(ctx, qCosignedCheckpointGet, origin)
	if err != nil {
		return c, fmt.Errorf("get cosigned checkpoint of %q: %w", origin, err)
	}
	return c, nil
}

// CosignedCheckpointGetByHash implements store.Executor.
func (e executor) CosignedCheckpointGetByHash(ctx context.Context, originHash string) (store.CosignedCheckpoint, error) {
	c, err := e.scanCosignedCheckpoint(ctx, qCosignedCheckpointGetByHash, originHash)
	if err != nil {
		return c, fmt.Errorf("get cosigned checkpoint of origin hash %q: %w", originHash, err)
	}
	return c, nil
}

func (e executor) scanCosignedCheckpoint(ctx context.Context, q, arg string) (store.CosignedCheckpoint, error) {
	var c store.CosignedCheckpoint
	var size, at int64
	err := e.r.QueryRowContext(ctx, q, arg).Scan(&c.Origin, &c.OriginHash, &size, &c.Hash, &c.Checkpoint, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return store.CosignedCheckpoint{}, store.ErrNotFound
	}
	if err != nil {
		return store.CosignedCheckpoint{}, err
	}
	c.Size, c.UpdatedAt = uint64(size), fromMicros(at)
	return c, nil
}

// CosignedCheckpointSwap implements store.Executor.
func (e executor) CosignedCheckpointSwap(ctx context.Context, p store.CosignedCheckpointSwapParams) (bool, error) {
	n := p.New
	var res sql.Result
	var err error
	if p.Old == nil {
		res, err = e.w.ExecContext(ctx, qCosignedCheckpointInsert, n.Origin, n.OriginHash, int64(n.Size), n.Hash, n.Checkpoint, nowMicros())
	} else {
		res, err = e.w.ExecContext(ctx, qCosignedCheckpointUpdate, int64(n.Size), n.Hash, n.Checkpoint, nowMicros(),
			n.Origin, n.OriginHash, int64(p.Old.Size), p.Old.Hash)
	}
	if err != nil {
		return false, fmt.Errorf("swap cosigned checkpoint of %q: %w", n.Origin, interpretError(err))
	}
	rows, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("swap cosigned checkpoint of %q: %w", n.Origin, err)
	}
	return rows == 1, nil
}
