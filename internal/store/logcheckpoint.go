package store

import (
	"context"
	"time"
)

// LogCheckpoint is what the log consistency monitor remembers of another domain's witness log.
type LogCheckpoint struct {
	// Origin names the log (its checkpoints' first line).
	Origin string
	// Checkpoint is the last signed checkpoint found consistent with every earlier one.
	Checkpoint []byte
	Size       uint64
	// Rejected is the last checkpoint found inconsistent with Checkpoint, already reported;
	// nil when none was.
	Rejected  []byte
	UpdatedAt time.Time
}

// LogCheckpointExecutor holds the checkpoints of the witness logs this domain monitors.
type LogCheckpointExecutor interface {
	// LogCheckpointGet returns origin's row, or ErrNotFound.
	LogCheckpointGet(ctx context.Context, origin string) (LogCheckpoint, error)
	// LogCheckpointAdvance stores checkpoint, of tree size size, as origin's unless a larger one
	// is stored, and reports whether it did. It clears Rejected.
	LogCheckpointAdvance(ctx context.Context, origin string, checkpoint []byte, size uint64) (bool, error)
	// LogCheckpointReject records checkpoint as origin's reported inconsistent one;
	// ErrNotFound if origin has no row.
	LogCheckpointReject(ctx context.Context, origin string, checkpoint []byte) error
	// LogCheckpointForget deletes origin's row, so that the next checkpoint is trusted as the
	// first: what an operator does after deciding about a reported inconsistency.
	LogCheckpointForget(ctx context.Context, origin string) error
}
