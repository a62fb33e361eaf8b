package store

import (
	"math"
	"time"
)

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
	// Origin is the actor IRI of the domain that made the anchor when it is another domain's
	// (Backend AnchorBackendFederation); "" for this domain's anchors.
	Origin string
	// Hashlink is the anchor's hashlink: set when this domain publishes its anchor, and at
	// insert for another domain's. Unique where set.
	Hashlink string
	// PublishedAt is when this domain's anchor was posted to its followers.
	PublishedAt *time.Time
	// IssuedAt is the whole second (Unix time) in which the anchor was issued: its credential's
	// issuanceDate (sidetree.AnchoredOperation.Time); 0 when not recorded.
	IssuedAt int64
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
	// Origin and Hashlink record another domain's anchor (see Anchor); Observed records it as
	// observed at once, because its operations are indexed in the same transaction. An anchor
	// with a Hashlink already recorded is refused with ErrConflict.
	Origin   string
	Hashlink string
	Observed bool
	// IssuedAt is the anchor's Anchor.IssuedAt; 0 records none.
	IssuedAt int64
}

// AnchorListParams pages through anchors in seq order.
type AnchorListParams struct {
	AfterSeq int64
	Limit    int
}

// AnchorListLatestParams pages backwards through anchors: newest first.
type AnchorListLatestParams struct {
	// BeforeSeq bounds the page: only anchors with a lower sequence number; 0 starts at the
	// newest.
	BeforeSeq int64
	Limit     int
}

// DIDOperation is one anchored operation in the per-DID index the observer maintains.
type DIDOperation struct {
	Suffix    string
	AnchorSeq int64
	// Index is the operation's position in its batch (creates, recovers, deactivates, updates).
	Index int
	Type  string
	// Request is the operation as anchored. The index does not keep it: the anchor's batch
	// files in CAS hold every operation, and the request is rebuilt from them byte for byte
	// (observer.Batches). Inserts ignore it (callers pass it along in memory, to the releases
	// of the observer); DIDOperationList returns it only for rows indexed before the index
	// stopped keeping it, and nil for the others.
	Request []byte
	// Origin, AnchorString and AnchorIssuedAt are the Origin, AnchorString and IssuedAt of the
	// operation's anchor; DIDOperationList fills them, inserts ignore them.
	Origin         string
	AnchorString   string
	AnchorIssuedAt int64
}

// Before returns the exclusive upper bound of the page's sequence numbers: BeforeSeq, or past
// every sequence number when it is not positive. Backends query "seq < Before()" so that both
// cases walk the primary key backwards from the bound.
func (p AnchorListLatestParams) Before() int64 {
	if p.BeforeSeq <= 0 {
		return math.MaxInt64
	}
	return p.BeforeSeq
}
