package store

import "time"

// Anchor statuses.
const (
	// AnchorPending: recorded, waiting for its backend (a ledger) to confirm.
	AnchorPending = "pending"
	// AnchorCompleted: confirmed; the observer will index its operations.
	AnchorCompleted = "completed"
	// AnchorFailed: the backend rejected it for good; its operations went back to the queue.
	AnchorFailed = "failed"
)

// Anchor is a row of anchors: one Sidetree batch anchored (or being anchored).
type Anchor struct {
	// Seq orders anchors; it is the "transaction number" of resolution.
	Seq          int64
	AnchorString string
	CoreIndexCID string
	OpCount      int
	Backend      string
	Status       string
	// Record is the backend's anchor record (the signed local record, a ledger reference).
	Record      []byte
	Signature   []byte
	Error       string
	CreatedAt   time.Time
	CompletedAt *time.Time
	ObservedAt  *time.Time
}

// AnchorInsertParams records a new anchor.
type AnchorInsertParams struct {
	AnchorString string
	CoreIndexCID string
	OpCount      int
	Backend      string
	Status       string
	Record       []byte
	Signature    []byte
}

// AnchorListParams pages through anchors in seq order.
type AnchorListParams struct {
	AfterSeq int64
	Limit    int
}

// DIDOperation is one anchored operation in the per-DID index the observer maintains.
type DIDOperation struct {
	Suffix    string
	AnchorSeq int64
	// Index is the operation's position in its batch (creates, recovers, deactivates, updates).
	Index   int
	Type    string
	Request []byte
}
