package pgstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// LedgerBatchInsert implements store.Executor. The batch and its transactions go in one pgx
// batch, which PostgreSQL runs as one implicit transaction when no transaction is open.
func (e executor) LedgerBatchInsert(ctx context.Context, p store.LedgerBatchInsertParams) error {
	b := &pgx.Batch{}
	b.Queue(qLedgerBatchInsert, p.HeaderSignature, p.DataChangeID, p.SignerPublicKey, p.Trace,
		hex.EncodeToString(p.SerializedBatch), p.ServiceID, p.AnchorSeq)
	for _, t := range p.Transactions {
		b.Queue(qLedgerTransactionInsert, t.HeaderSignature, p.HeaderSignature, t.FamilyName, t.FamilyVersion,
			t.SignerPublicKey)
	}
	if err := e.q.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("insert ledger batch %.16s: %w", p.HeaderSignature, interpretError(err))
	}
	return nil
}

// LedgerBatchGet implements store.Executor.
func (e executor) LedgerBatchGet(ctx context.Context, id string) (store.LedgerBatch, error) {
	b, err := scanLedgerBatch(e.q.QueryRow(ctx, qLedgerBatchGet, id))
	if err != nil {
		return b, fmt.Errorf("get ledger batch %.16s: %w", id, interpretError(err))
	}
	return b, nil
}

// LedgerBatchGetByAnchor implements store.Executor.
func (e executor) LedgerBatchGetByAnchor(ctx context.Context, anchorSeq int64) (store.LedgerBatch, error) {
	b, err := scanLedgerBatch(e.q.QueryRow(ctx, qLedgerBatchGetByAnchor, anchorSeq))
	if err != nil {
		return b, fmt.Errorf("get ledger batch of anchor %d: %w", anchorSeq, interpretError(err))
	}
	return b, nil
}

// LedgerBatchClaim implements store.Executor.
func (e executor) LedgerBatchClaim(ctx context.Context, p store.LedgerBatchClaimParams) ([]store.LedgerBatch, error) {
	if p.Owner == "" || p.Limit <= 0 || p.TTL <= 0 {
		return nil, fmt.Errorf("claim ledger batches: owner %q, limit %d, ttl %s: all must be set", p.Owner, p.Limit, p.TTL)
	}
	rows, err := e.q.Query(ctx, qLedgerBatchClaim, p.Owner, p.TTL.Microseconds(), p.Limit, historyStamp())
	if err != nil {
		return nil, fmt.Errorf("claim ledger batches: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LedgerBatch, error) { return scanLedgerBatch(r) })
	if err != nil {
		return nil, fmt.Errorf("claim ledger batches: %w", err)
	}
	return out, nil
}

// LedgerBatchMarkSubmitted implements store.Executor.
func (e executor) LedgerBatchMarkSubmitted(ctx context.Context, p store.LedgerBatchMarkSubmittedParams) error {
	return e.fenced(ctx, "mark ledger batch submitted", p.Claim, qLedgerBatchMarkSubmitted,
		attempted(p.Attempted), historyJSON(p.History))
}

// LedgerBatchMarkFailed implements store.Executor.
func (e executor) LedgerBatchMarkFailed(ctx context.Context, p store.LedgerBatchMarkFailedParams) error {
	return e.fenced(ctx, "mark ledger batch failed", p.Claim, qLedgerBatchMarkFailed,
		p.Error, p.Message, attempted(p.Attempted), historyJSON(p.History))
}

// LedgerBatchRelinquish implements store.Executor.
func (e executor) LedgerBatchRelinquish(ctx context.Context, p store.LedgerBatchRelinquishParams) error {
	return e.fenced(ctx, "relinquish ledger batch", p.Claim, qLedgerBatchRelinquish,
		attempted(p.Attempted), max(p.Backoff, 0).Microseconds(), p.MaybeSubmitted, historyJSON(p.History))
}

// fenced runs a transition whose first three parameters are the claim's batch id, owner and
// term; no row changed means the claim is no longer held.
func (e executor) fenced(ctx context.Context, op string, c store.LedgerClaim, q string, args ...any) error {
	tag, err := e.q.Exec(ctx, q, append([]any{c.BatchID, c.Owner, c.Term}, args...)...)
	if err != nil {
		return fmt.Errorf("%s %.16s: %w", op, c.BatchID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s %.16s (owner %s, term %d): %w", op, c.BatchID, c.Owner, c.Term, store.ErrLeaseLost)
	}
	return nil
}

// LedgerBatchListUnsettled implements store.Executor.
func (e executor) LedgerBatchListUnsettled(ctx context.Context, p store.LedgerBatchListUnsettledParams) ([]store.LedgerBatch, error) {
	rows, err := e.q.Query(ctx, qLedgerBatchListUnsettled, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list unsettled ledger batches: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LedgerBatch, error) { return scanLedgerBatch(r) })
	if err != nil {
		return nil, fmt.Errorf("list unsettled ledger batches: %w", err)
	}
	return out, nil
}

// LedgerBatchSetStatus implements store.Executor.
func (e executor) LedgerBatchSetStatus(ctx context.Context, p store.LedgerBatchSetStatusParams) error {
	tag, err := e.q.Exec(ctx, qLedgerBatchSetStatus, p.BatchID, p.From, p.To)
	if err != nil {
		return fmt.Errorf("set ledger batch %.16s status %s: %w", p.BatchID, p.To, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set ledger batch %.16s status %s: not submitted with status %q: %w", p.BatchID, p.To, p.From, store.ErrNotFound)
	}
	return nil
}

// LedgerBatchCommitMany implements store.Executor.
func (e executor) LedgerBatchCommitMany(ctx context.Context, ps []store.LedgerBatchCommitParams) ([]store.LedgerBatchCommitted, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	ids, froms := make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		ids[i], froms[i] = p.BatchID, p.From
	}
	rows, err := e.q.Query(ctx, qLedgerBatchCommitMany, ids, froms)
	if err != nil {
		return nil, fmt.Errorf("commit %d ledger batches: %w", len(ps), err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LedgerBatchCommitted, error) {
		var c store.LedgerBatchCommitted
		err := r.Scan(&c.BatchID, &c.AnchorSeq, &c.AnchorCompleted)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("commit %d ledger batches: %w", len(ps), err)
	}
	return out, nil
}

// LedgerBatchResubmit implements store.Executor.
func (e executor) LedgerBatchResubmit(ctx context.Context, p store.LedgerBatchResubmitParams) error {
	tag, err := e.q.Exec(ctx, qLedgerBatchResubmit, p.BatchID, p.From, historyJSON(p.History))
	if err != nil {
		return fmt.Errorf("resubmit ledger batch %.16s: %w", p.BatchID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("resubmit ledger batch %.16s: not submitted with status %q: %w", p.BatchID, p.From, store.ErrNotFound)
	}
	return nil
}

// LedgerBatchCount implements store.Executor.
func (e executor) LedgerBatchCount(ctx context.Context) (store.LedgerBatchCounts, error) {
	var c store.LedgerBatchCounts
	if err := e.q.QueryRow(ctx, qLedgerBatchCount).Scan(&c.Unsubmitted, &c.Claimed, &c.Unsettled, &c.Committed,
		&c.Invalid, &c.Failed); err != nil {
		return c, fmt.Errorf("count ledger batches: %w", err)
	}
	return c, nil
}

// LedgerTransactionList implements store.Executor.
func (e executor) LedgerTransactionList(ctx context.Context, batchID string) ([]store.LedgerTransaction, error) {
	rows, err := e.q.Query(ctx, qLedgerTransactionList, batchID)
	if err != nil {
		return nil, fmt.Errorf("list transactions of batch %.16s: %w", batchID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LedgerTransaction, error) {
		var t store.LedgerTransaction
		err := r.Scan(&t.HeaderSignature, &t.BatchID, &t.FamilyName, &t.FamilyVersion, &t.SignerPublicKey)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("list transactions of batch %.16s: %w", batchID, err)
	}
	return out, nil
}

// LedgerReceiptInsertMany implements store.Executor.
func (e executor) LedgerReceiptInsertMany(ctx context.Context, rs []store.LedgerReceipt) error {
	if len(rs) == 0 {
		return nil
	}
	n := len(rs)
	ids, msgs, data, ser, ext, extMsg := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	valid := make([]bool, n)
	for i, r := range rs {
		ids[i], valid[i], msgs[i], data[i] = r.TransactionID, r.ResultValid, r.ErrorMessage, r.ErrorData
		ser[i], ext[i], extMsg[i] = r.SerializedReceipt, r.ExternalStatus, r.ExternalErrorMessage
	}
	if _, err := e.q.Exec(ctx, qLedgerReceiptInsert, ids, valid, msgs, data, ser, ext, extMsg); err != nil {
		return fmt.Errorf("insert %d transaction receipts: %w", n, err)
	}
	return nil
}

// LedgerReceiptGet implements store.Executor.
func (e executor) LedgerReceiptGet(ctx context.Context, transactionID string) (store.LedgerReceipt, error) {
	var r store.LedgerReceipt
	err := e.q.QueryRow(ctx, qLedgerReceiptGet, transactionID).Scan(&r.ID, &r.TransactionID, &r.ResultValid,
		&r.ErrorMessage, &r.ErrorData, &r.SerializedReceipt, &r.ExternalStatus, &r.ExternalErrorMessage)
	if err != nil {
		return r, fmt.Errorf("get receipt of transaction %.16s: %w", transactionID, interpretError(err))
	}
	return r, nil
}

// AnchorCompletePending implements store.Executor.
func (e executor) AnchorCompletePending(ctx context.Context, seq int64) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qAnchorCompletePending, seq))
	if err != nil {
		return a, fmt.Errorf("complete pending anchor %d: %w", seq, interpretError(err))
	}
	return a, nil
}

// AnchorFailPending implements store.Executor.
func (e executor) AnchorFailPending(ctx context.Context, p store.AnchorFailParams) (store.Anchor, error) {
	a, err := scanAnchor(e.q.QueryRow(ctx, qAnchorFailPending, p.Seq, p.Reason))
	if err != nil {
		return a, fmt.Errorf("fail pending anchor %d: %w", p.Seq, interpretError(err))
	}
	return a, nil
}

func scanLedgerBatch(r pgx.Row) (store.LedgerBatch, error) {
	var b store.LedgerBatch
	var dataChange, subErr, subMsg, dlt, service, owner *string
	var serialized string
	var claimExp, created, submittedAt *time.Time
	var hist []byte
	err := r.Scan(&b.HeaderSignature, &dataChange, &b.SignerPublicKey, &b.Trace, &serialized, &b.Submitted,
		&subErr, &subMsg, &dlt, &claimExp, &created, &service, &b.AnchorSeq, &owner, &b.ClaimTerm, &b.Attempts,
		&b.NextAttemptAt, &b.MaybeSubmitted, &hist, &submittedAt)
	if err != nil {
		return b, err
	}
	b.DataChangeID, b.SubmissionError, b.SubmissionErrorMessage = deref(dataChange), deref(subErr), deref(subMsg)
	b.DLTStatus, b.ServiceID, b.ClaimOwner = deref(dlt), deref(service), deref(owner)
	b.ClaimExpires, b.SubmittedAt = utcPtr(claimExp), utcPtr(submittedAt)
	if created != nil {
		b.Created = created.UTC()
	}
	b.NextAttemptAt = b.NextAttemptAt.UTC()
	b.History = parseHistory(hist)
	if b.SerializedBatch, err = hex.DecodeString(serialized); err != nil {
		return b, fmt.Errorf("batch %.16s: serialized_batch is not hex: %w", b.HeaderSignature, err)
	}
	return b, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func attempted(b bool) int {
	if b {
		return 1
	}
	return 0
}

// historyStamp is the time prefix of a history line written by SQL (the host clock: history is
// for people, never compared).
func historyStamp() string { return time.Now().UTC().Format(time.RFC3339) }
