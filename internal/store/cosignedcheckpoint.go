package store

import (
	"context"
	"time"
)

// CosignedCheckpoint is what this domain, as a C2SP tlog-witness, last cosigned for a log.
type CosignedCheckpoint struct {
	// Origin names the log (its checkpoints' first line).
	Origin string
	// OriginHash is the lowercase hex SHA-256 of Origin: the name of the log under the
	// witness's monitoring prefix.
	OriginHash string
	Size       uint64
	// Hash is the tree's root hash.
	Hash []byte
	// Checkpoint is the signed note as served to monitors: the checkpoint, the log's
	// signatures that verified, and this witness's cosignatures.
	Checkpoint []byte
	UpdatedAt  time.Time
}

// CosignedCheckpointSwapParams is a compare-and-swap of a log's cosigned checkpoint: Old is
// the row the caller read (nil when it found none), and the swap happens only if the row is
// still exactly that.
type CosignedCheckpointSwapParams struct {
	Old *CosignedCheckpoint
	New CosignedCheckpoint
}

// CosignedCheckpointExecutor holds the checkpoints this domain cosigned as a witness.
type CosignedCheckpointExecutor interface {
	// CosignedCheckpointGet returns origin's row, or ErrNotFound.
	CosignedCheckpointGet(ctx context.Context, origin string) (CosignedCheckpoint, error)
	// CosignedCheckpointGetByHash returns the row whose OriginHash is originHash, or
	// ErrNotFound.
	CosignedCheckpointGetByHash(ctx context.Context, originHash string) (CosignedCheckpoint, error)
	// CosignedCheckpointSwap stores p.New if origin's row is still p.Old (same size and root
	// hash; no row when p.Old is nil) and reports whether it did. The comparison and the write
	// MUST be one atomic step for every instance sharing the database: two swaps from one Old
	// never both succeed.
	CosignedCheckpointSwap(ctx context.Context, p CosignedCheckpointSwapParams) (bool, error)
}
