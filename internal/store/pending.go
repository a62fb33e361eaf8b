package store

import (
	"context"
	"time"
)

// DIDPendingParams reserves a DID for one pending operation.
type DIDPendingParams struct {
	Suffix string
	// OpID is the operation that holds the DID (the hash of its canonical request).
	OpID string
	// TTL bounds the reservation: after it (database clock) another operation may take the DID.
	TTL time.Duration
}

// DIDPendingKey names one reservation: a DID and the operation holding it.
type DIDPendingKey struct {
	Suffix string
	OpID   string
}

// PendingExecutor holds the reservations that allow one pending operation per DID across the
// instances of a cluster.
type PendingExecutor interface {
	// DIDPendingReserve reserves p.Suffix for p.OpID and reports whether it did. It succeeds
	// when the DID has no reservation, or its reservation is p.OpID's own (a retry), has
	// expired, or belongs to an operation that was parked as a dead letter (it will not be
	// anchored). It fails (false, nil) while another operation's live reservation holds the DID.
	DIDPendingReserve(ctx context.Context, p DIDPendingParams) (bool, error)
	// DIDPendingRelease ends the listed reservations; a DID held by another operation than the
	// one named is left alone.
	DIDPendingRelease(ctx context.Context, keys []DIDPendingKey) error
}
