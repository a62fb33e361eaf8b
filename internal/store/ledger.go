package store

import (
	"context"
	"time"
)

// LedgerExecutor holds the queries of the ledger anchoring backend: the seed's batches,
// transactions and transaction_receipts tables (Hyperledger Grid's column names), the claims
// batch submitters take on batches, and the transitions of ledger anchors.
//
// A batch row moves through these states (package submitter says when):
//
//	unsubmitted ─LedgerBatchClaim──────▶ claimed
//	claimed ─LedgerBatchMarkSubmitted──▶ submitted, dlt_status PENDING
//	claimed ─LedgerBatchMarkFailed─────▶ submitted with a submission_error (rejected or parked)
//	claimed ─LedgerBatchRelinquish─────▶ unsubmitted, due after a backoff
//	submitted ─LedgerBatchSetStatus────▶ another dlt_status (INVALID is final)
//	submitted ─LedgerBatchCommitMany───▶ COMMITTED (final), anchor completed
//	submitted ─LedgerBatchResubmit─────▶ unsubmitted, due now (the ledger lost it)
//
// Claims use the database clock: claim_expires = now + TTL. Every transition of a claimed row
// is fenced by the claim (owner and term) in the statement itself; a writer whose claim was
// taken over gets ErrLeaseLost and nothing is written. A claim that expired but was not taken
// over yet still fences correctly: its holder is the only one that worked on the row.
type LedgerExecutor interface {
	// LedgerBatchInsert adds an unsubmitted batch and its transactions; ErrConflict if the
	// batch id (or a transaction id) is already stored.
	LedgerBatchInsert(ctx context.Context, p LedgerBatchInsertParams) error
	// LedgerBatchGet returns a batch, or ErrNotFound.
	LedgerBatchGet(ctx context.Context, id string) (LedgerBatch, error)
	// LedgerBatchGetByAnchor returns the batch of an anchor, or ErrNotFound.
	LedgerBatchGetByAnchor(ctx context.Context, anchorSeq int64) (LedgerBatch, error)
	// LedgerBatchClaim claims, in one statement, up to p.Limit unsubmitted batches whose claim
	// is empty or expired and whose next attempt is due, oldest due first: it sets the claim
	// owner, bumps the claim term and sets claim_expires = database now + p.TTL. A batch whose
	// previous claim expired without an outcome counts that claim as an attempt, is marked
	// MaybeSubmitted (its holder may have sent it) and gets a history line. Concurrent callers
	// never claim the same batch (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: one writer).
	LedgerBatchClaim(ctx context.Context, p LedgerBatchClaimParams) ([]LedgerBatch, error)
	// LedgerBatchMarkSubmitted records that the ledger holds the batch: submitted, dlt_status
	// PENDING, submitted_at = now, claim cleared. ErrLeaseLost unless p.Claim still holds it.
	LedgerBatchMarkSubmitted(ctx context.Context, p LedgerBatchMarkSubmittedParams) error
	// LedgerBatchMarkFailed ends the batch's submission for good: submitted with
	// submission_error and submission_error_message (the ledger rejected it, or it was
	// parked), claim cleared. ErrLeaseLost unless p.Claim still holds it.
	LedgerBatchMarkFailed(ctx context.Context, p LedgerBatchMarkFailedParams) error
	// LedgerBatchRelinquish gives the claim up: the batch stays unsubmitted and becomes due at
	// database now + p.Backoff. ErrLeaseLost unless p.Claim still holds it.
	LedgerBatchRelinquish(ctx context.Context, p LedgerBatchRelinquishParams) error
	// LedgerBatchListUnsettled pages, in id order, through submitted batches without a
	// submission error whose dlt_status is not final (not COMMITTED or INVALID). The rows
	// come without SerializedBatch (a poller has no use for it).
	LedgerBatchListUnsettled(ctx context.Context, p LedgerBatchListUnsettledParams) ([]LedgerBatch, error)
	// LedgerBatchSetStatus moves an unsettled batch's dlt_status from p.From to p.To;
	// ErrNotFound if the batch is not unsettled with dlt_status p.From (someone else moved it,
	// or its status is final).
	LedgerBatchSetStatus(ctx context.Context, p LedgerBatchSetStatusParams) error
	// LedgerBatchCommitMany records that the ledger committed batches, in one statement on
	// PostgreSQL: each batch still unsettled with dlt_status From becomes COMMITTED, gets a
	// valid receipt per transaction, and its anchor completes if it is pending. It returns
	// what it moved; batches moved meanwhile by someone else are left out.
	LedgerBatchCommitMany(ctx context.Context, ps []LedgerBatchCommitParams) ([]LedgerBatchCommitted, error)
	// LedgerBatchResubmit marks a submitted batch that the ledger lost unsubmitted again, due
	// now, so that a submitter claims it and sends the same bytes; ErrNotFound unless it is
	// unsettled with dlt_status p.From.
	LedgerBatchResubmit(ctx context.Context, p LedgerBatchResubmitParams) error
	// LedgerBatchCount counts batches by state.
	LedgerBatchCount(ctx context.Context) (LedgerBatchCounts, error)
	// LedgerTransactionList returns a batch's transactions in id order.
	LedgerTransactionList(ctx context.Context, batchID string) ([]LedgerTransaction, error)
	// LedgerReceiptInsertMany records transaction receipts; a transaction that already has
	// one keeps it.
	LedgerReceiptInsertMany(ctx context.Context, rs []LedgerReceipt) error
	// LedgerReceiptGet returns the receipt of a transaction, or ErrNotFound.
	LedgerReceiptGet(ctx context.Context, transactionID string) (LedgerReceipt, error)

	// AnchorCompletePending completes a pending anchor (status completed, completed_at now)
	// and returns it; ErrNotFound if no pending anchor has that sequence number.
	AnchorCompletePending(ctx context.Context, seq int64) (Anchor, error)
	// AnchorFailPending fails a pending anchor with a reason and returns it; ErrNotFound if
	// no pending anchor has that sequence number. The caller gives the anchor's operations
	// back to the queue in the same transaction.
	AnchorFailPending(ctx context.Context, p AnchorFailParams) (Anchor, error)
}

// The dlt_status values (Sawtooth's batch statuses).
const (
	LedgerStatusPending   = "PENDING"
	LedgerStatusCommitted = "COMMITTED"
	LedgerStatusInvalid   = "INVALID"
	LedgerStatusUnknown   = "UNKNOWN"
)

// The submission_error values (at most 16 characters, the column's width in Grid's schema).
const (
	// LedgerErrorBadRequest: the ledger answered 400 (Grid's value).
	LedgerErrorBadRequest = "Bad Request"
	// LedgerErrorNotFound: the ledger answered 404 (Splinter: unknown circuit or service).
	LedgerErrorNotFound = "Not Found"
	// LedgerErrorParked: retries ran out; the batch is parked in dead_letters.
	LedgerErrorParked = "Parked"
)

// LedgerBatch is a row of batches.
type LedgerBatch struct {
	// HeaderSignature is the batch id.
	HeaderSignature string
	// DataChangeID is Grid's client-supplied alternate id; anchord stores the anchor string.
	DataChangeID    string
	SignerPublicKey string
	Trace           bool
	// SerializedBatch is the BatchList to submit (stored hex-encoded, as Grid does).
	SerializedBatch        []byte
	Submitted              bool
	SubmissionError        string
	SubmissionErrorMessage string
	DLTStatus              string
	ClaimExpires           *time.Time
	Created                time.Time
	ServiceID              string

	// AnchorSeq is the anchor this batch delivers.
	AnchorSeq  int64
	ClaimOwner string
	// ClaimTerm grows by one at every claim; with ClaimOwner it fences the claim's writes.
	ClaimTerm int64
	// Attempts counts submissions made, including claims that expired without an outcome.
	Attempts      int
	NextAttemptAt time.Time
	// MaybeSubmitted: the ledger may hold the batch although no acceptance was recorded (a
	// submission got no answer, or a claim expired mid-flight). The submitter asks the ledger
	// before sending it again.
	MaybeSubmitted bool
	// History has one line per attempt that did not end the batch's submission.
	History     []string
	SubmittedAt *time.Time
}

// Claim returns the fence of the batch's current claim.
func (b LedgerBatch) Claim() LedgerClaim {
	return LedgerClaim{BatchID: b.HeaderSignature, Owner: b.ClaimOwner, Term: b.ClaimTerm}
}

// LedgerTransaction is a row of transactions.
type LedgerTransaction struct {
	HeaderSignature string
	BatchID         string
	FamilyName      string
	FamilyVersion   string
	SignerPublicKey string
}

// LedgerReceipt is a row of transaction_receipts. The Sawtooth batch-status API reports no
// receipt bytes, so SerializedReceipt is empty for receipts anchord derives from a status.
type LedgerReceipt struct {
	ID                   int64
	TransactionID        string
	ResultValid          bool
	ErrorMessage         string
	ErrorData            string
	SerializedReceipt    string
	ExternalStatus       string
	ExternalErrorMessage string
}

// LedgerBatchInsertParams is a new batch.
type LedgerBatchInsertParams struct {
	HeaderSignature string
	DataChangeID    string
	SignerPublicKey string
	Trace           bool
	SerializedBatch []byte
	ServiceID       string
	AnchorSeq       int64
	Transactions    []LedgerTransaction
}

// LedgerBatchClaimParams claims batches for one owner.
type LedgerBatchClaimParams struct {
	Owner string
	Limit int
	// TTL sets claim_expires = database now + TTL.
	TTL time.Duration
}

// LedgerClaim fences a write to a claimed batch.
type LedgerClaim struct {
	BatchID string
	Owner   string
	Term    int64
}

// LedgerBatchMarkSubmittedParams records an accepted (or already held) batch.
type LedgerBatchMarkSubmittedParams struct {
	Claim LedgerClaim
	// Attempted counts a submission (false when a status check found the batch held).
	Attempted bool
	History   []string
}

// LedgerBatchMarkFailedParams ends a batch's submission with an error.
type LedgerBatchMarkFailedParams struct {
	Claim     LedgerClaim
	Error     string // LedgerErrorBadRequest, LedgerErrorNotFound, LedgerErrorParked
	Message   string
	Attempted bool
	History   []string
}

// LedgerBatchRelinquishParams gives a claim up.
type LedgerBatchRelinquishParams struct {
	Claim LedgerClaim
	// Attempted counts a submission (false when the batch was not sent).
	Attempted bool
	// Backoff delays the next attempt: next_attempt_at = database now + Backoff.
	Backoff        time.Duration
	MaybeSubmitted bool
	History        []string
}

// LedgerBatchListUnsettledParams pages through unsettled batches.
type LedgerBatchListUnsettledParams struct {
	AfterID string
	Limit   int
}

// LedgerBatchSetStatusParams moves a batch's dlt_status.
type LedgerBatchSetStatusParams struct {
	BatchID string
	From    string
	To      string
}

// LedgerBatchCommitParams names a batch the ledger committed and the dlt_status it was seen
// with.
type LedgerBatchCommitParams struct {
	BatchID string
	From    string
}

// LedgerBatchCommitted is a batch LedgerBatchCommitMany moved to COMMITTED.
type LedgerBatchCommitted struct {
	BatchID   string
	AnchorSeq int64
	// AnchorCompleted is false when the anchor was not pending (an anomaly worth a log line).
	AnchorCompleted bool
}

// LedgerBatchResubmitParams returns a lost batch to the submitters.
type LedgerBatchResubmitParams struct {
	BatchID string
	From    string
	History []string
}

// LedgerBatchCounts counts batches by state.
type LedgerBatchCounts struct {
	// Unsubmitted: waiting for a submitter (claimed or not).
	Unsubmitted int
	// Claimed: unsubmitted with an unexpired claim.
	Claimed int
	// Unsettled: submitted and waiting for a final status.
	Unsettled int
	Committed int
	Invalid   int
	// Failed: submission ended with a submission error (rejected or parked).
	Failed int
}

// AnchorFailParams fails a pending anchor.
type AnchorFailParams struct {
	Seq    int64
	Reason string
}
