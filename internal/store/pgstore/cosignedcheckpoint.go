package pgstore

import (
	"context"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

const (
	qCosignedCheckpointCols      = `origin, origin_hash, size, root_hash, checkpoint, updated_at`
	qCosignedCheckpointGet       = `SELECT ` + qCosignedCheckpointCols + ` FROM cosigned_checkpoints WHERE origin = $1`
	qCosignedCheckpointGetByHash = `SELECT ` + qCosignedCheckpointCols + ` FROM cosigned_checkpoints WHERE origin_hash = $1`
	// The first checkpoint of a log: a concurrent first insert makes this one do nothing.
	qCosignedCheckpointInsert = `INSERT INTO cosigned_checkpoints (origin, origin_hash, size, root_hash, checkpoint)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	// Under READ COMMITTED a concurrent update of the row makes this one wait and then
	// re-evaluate its WHERE against the committed row, which no longer matches: one winner.
	qCosignedCheckpointUpdate = `UPDATE cosigned_checkpoints SET size = $3, root_hash = $4, checkpoint = $5, updated_at = now()
		WHERE origin = $1 AND size = $6 AND root_hash = $7 AND origin_hash = $2`
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
	var size int64
	err := e.q.QueryRow(ctx, q, arg).Scan(&c.Origin, &c.OriginHash, &size, &c.Hash, &c.Checkpoint, &c.UpdatedAt)
	if err != nil {
		return store.CosignedCheckpoint{}, interpretError(err)
	}
	c.Size = uint64(size)
	return c, nil
}

// CosignedCheckpointSwap implements store.Executor.
func (e executor) CosignedCheckpointSwap(ctx context.Context, p store.CosignedCheckpointSwapParams) (bool, error) {
	n := p.New
	args := []any{n.Origin, n.OriginHash, int64(n.Size), n.Hash, n.Checkpoint}
	q := qCosignedCheckpointInsert
	if p.Old != nil {
		q = qCosignedCheckpointUpdate
		args = append(args, int64(p.Old.Size), p.Old.Hash)
	}
	tag, err := e.q.Exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("swap cosigned checkpoint of %q: %w", n.Origin, interpretError(err))
	}
	return tag.RowsAffected() == 1, nil
}
