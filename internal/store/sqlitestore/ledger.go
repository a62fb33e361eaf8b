package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// LedgerBatchInsert implements store.Executor.
func (e executor) LedgerBatchInsert(ctx context.Context, p store.LedgerBatchInsertParams) error {
	err := e.batch(ctx, func(tx *sql.Tx) error {
		now := nowMicros()
		if _, err := tx.ExecContext(ctx, qLedgerBatchInsert, p.HeaderSignature, p.DataChangeID, p.SignerPublicKey,
			p.Trace, hex.EncodeToString(p.SerializedBatch), now, p.ServiceID, p.AnchorSeq, now); err != nil {
			return err
		}
		for _, t := range p.Transactions {
			if _, err := tx.ExecContext(ctx, qLedgerTransactionInsert, t.HeaderSignature, p.HeaderSignature,
				t.FamilyName, t.FamilyVersion, t.SignerPublicKey); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert ledger batch %.16s: %w", p.HeaderSignature, interpretError(err))
	}
	return nil
}

// LedgerBatchGet implements store.Executor.
func (e executor) LedgerBatchGet(ctx context.Context, id string) (store.LedgerBatch, error) {
	b, err := scanLedgerBatch(e.r.QueryRowContext(ctx, qLedgerBatchGet, id))
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("get ledger batch %.16s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return b, fmt.Errorf("get ledger batch %.16s: %w", id, err)
	}
	return b, nil
}

// LedgerBatchGetByAnchor implements store.Executor.
func (e executor) LedgerBatchGetByAnchor(ctx context.Context, anchorSeq int64) (store.LedgerBatch, error) {
	b, err := scanLedgerBatch(e.r.QueryRowContext(ctx, qLedgerBatchGetByAnchor, anchorSeq))
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("get ledger batch of anchor %d: %w", anchorSeq, store.ErrNotFound)
	}
	if err != nil {
		return b, fmt.Errorf("get ledger batch of anchor %d: %w", anchorSeq, err)
	}
	return b, nil
}

// LedgerBatchClaim implements store.Executor.
func (e executor) LedgerBatchClaim(ctx context.Context, p store.LedgerBatchClaimParams) ([]store.LedgerBatch, error) {
	if p.Owner == "" || p.Limit <= 0 || p.TTL <= 0 {
		return nil, fmt.Errorf("claim ledger batches: owner %q, limit %d, ttl %s: all must be set", p.Owner, p.Limit, p.TTL)
	}
	now := time.Now()
	out, err := queryLedgerBatches(ctx, e.w, qLedgerBatchClaim, p.Owner, micros(now.Add(p.TTL)),
		historyStamp(now), micros(now), micros(now), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("claim ledger batches: %w", err)
	}
	return out, nil
}

// LedgerBatchMarkSubmitted implements store.Executor.
func (e executor) LedgerBatchMarkSubmitted(ctx context.Context, p store.LedgerBatchMarkSubmittedParams) error {
	return e.fenced(ctx, "mark ledger batch submitted", p.Claim, qLedgerBatchMarkSubmitted,
		nowMicros(), attempted(p.Attempted), historyJSON(p.History))
}

// LedgerBatchMarkFailed implements store.Executor.
func (e executor) LedgerBatchMarkFailed(ctx context.Context, p store.LedgerBatchMarkFailedParams) error {
	return e.fenced(ctx, "mark ledger batch failed", p.Claim, qLedgerBatchMarkFailed,
		p.Error, p.Message, attempted(p.Attempted), historyJSON(p.History))
}

// LedgerBatchRelinquish implements store.Executor.
func (e executor) LedgerBatchRelinquish(ctx context.Context, p store.LedgerBatchRelinquishParams) error {
	return e.fenced(ctx, "relinquish ledger batch", p.Claim, qLedgerBatchRelinquish,
		attempted(p.Attempted), micros(time.Now().Add(max(p.Backoff, 0))), p.MaybeSubmitted, historyJSON(p.History))
}

// fenced runs a transition whose last three parameters are the claim's batch id, owner and
// term; no row changed means the claim is no longer held.
func (e executor) fenced(ctx context.Context, op string, c store.LedgerClaim, q string, args ...any) error {
	res, err := e.w.ExecContext(ctx, q, append(args, c.BatchID, c.Owner, c.Term)...)
	if err != nil {
		return fmt.Errorf("%s %.16s: %w", op, c.BatchID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s %.16s (owner %s, term %d): %w", op, c.BatchID, c.Owner, c.Term, store.ErrLeaseLost)
	}
	return nil
}

// LedgerBatchListUnsettled implements store.Executor.
func (e executor) LedgerBatchListUnsettled(ctx context.Context, p store.LedgerBatchListUnsettledParams) ([]store.LedgerBatch, error) {
	out, err := queryLedgerBatches(ctx, e.r, qLedgerBatchListUnsettled, p.AfterID, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list unsettled ledger batches: %w", err)
	}
	return out, nil
}

// LedgerBatchSetStatus implements store.Executor.
func (e executor) LedgerBatchSetStatus(ctx context.Context, p store.LedgerBatchSetStatusParams) error {
	res, err := e.w.ExecContext(ctx, qLedgerBatchSetStatus, p.To, p.BatchID, p.From)
	if err != nil {
		return fmt.Errorf("set ledger batch %.16s status %s: %w", p.BatchID, p.To, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("set ledger batch %.16s status %s: not submitted with status %q: %w", p.BatchID, p.To, p.From, store.ErrNotFound)
	}
	return nil
}

// LedgerBatchCommitMany implements store.Executor.
func (e executor) LedgerBatchCommitMany(ctx context.Context, ps []store.LedgerBatchCommitParams) ([]store.LedgerBatchCommitted, error) {
	var out []store.LedgerBatchCommitted
	err := e.batch(ctx, func(tx *sql.Tx) error {
		now := nowMicros()
		for _, p := range ps {
			c := store.LedgerBatchCommitted{BatchID: p.BatchID}
			err := tx.QueryRowContext(ctx, qLedgerBatchCommit, p.BatchID, p.From).Scan(&c.AnchorSeq)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, qLedgerCommitReceipts, p.BatchID); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, qLedgerCommitAnchor, now, c.AnchorSeq)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			c.AnchorCompleted = n == 1
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commit %d ledger batches: %w", len(ps), err)
	}
	return out, nil
}

// LedgerBatchResubmit implements store.Executor.
func (e executor) LedgerBatchResubmit(ctx context.Context, p store.LedgerBatchResubmitParams) error {
	res, err := e.w.ExecContext(ctx, qLedgerBatchResubmit, nowMicros(), historyJSON(p.History), p.BatchID, p.From)
	if err != nil {
		return fmt.Errorf("resubmit ledger batch %.16s: %w", p.BatchID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("resubmit ledger batch %.16s: not submitted with status %q: %w", p.BatchID, p.From, store.ErrNotFound)
	}
	return nil
}

// LedgerBatchCount implements store.Executor.
func (e executor) LedgerBatchCount(ctx context.Context) (store.LedgerBatchCounts, error) {
	var c store.LedgerBatchCounts
	if err := e.r.QueryRowContext(ctx, qLedgerBatchCount, nowMicros()).Scan(&c.Unsubmitted, &c.Claimed, &c.Unsettled,
		&c.Committed, &c.Invalid, &c.Failed); err != nil {
		return c, fmt.Errorf("count ledger batches: %w", err)
	}
	return c, nil
}

// LedgerTransactionList implements store.Executor.
func (e executor) LedgerTransactionList(ctx context.Context, batchID string) ([]store.LedgerTransaction, error) {
	rows, err := e.r.QueryContext(ctx, qLedgerTransactionList, batchID)
	if err != nil {
		return nil, fmt.Errorf("list transactions of batch %.16s: %w", batchID, err)
	}
	defer rows.Close()
	var out []store.LedgerTransaction
	for rows.Next() {
		var t store.LedgerTransaction
		if err := rows.Scan(&t.HeaderSignature, &t.BatchID, &t.FamilyName, &t.FamilyVersion, &t.SignerPublicKey); err != nil {
			return nil, fmt.Errorf("list transactions of batch %.16s: %w", batchID, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list transactions of batch %.16s: %w", batchID, err)
	}
	return out, nil
}

// LedgerReceiptInsertMany implements store.Executor.
func (e executor) LedgerReceiptInsertMany(ctx context.Context, rs []store.LedgerReceipt) error {
	err := e.batch(ctx, func(tx *sql.Tx) error {
		for _, r := range rs {
			if _, err := tx.ExecContext(ctx, qLedgerReceiptInsert, r.TransactionID, r.ResultValid, r.ErrorMessage,
				r.ErrorData, r.SerializedReceipt, r.ExternalStatus, r.ExternalErrorMessage); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d transaction receipts: %w", len(rs), err)
	}
	return nil
}

// LedgerReceiptGet implements store.Executor.
func (e executor) LedgerReceiptGet(ctx context.Context, transactionID string) (store.LedgerReceipt, error) {
	var r store.LedgerReceipt
	err := e.r.QueryRowContext(ctx, qLedgerReceiptGet, transactionID).Scan(&r.ID, &r.TransactionID, &r.ResultValid,
		&r.ErrorMessage, &r.ErrorData, &r.SerializedReceipt, &r.ExternalStatus, &r.ExternalErrorMessage)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("get receipt of transaction %.16s: %w", transactionID, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("get receipt of transaction %.16s: %w", transactionID, err)
	}
	return r, nil
}

// AnchorCompletePending implements store.Executor.
func (e executor) AnchorCompletePending(ctx context.Context, seq int64) (store.Anchor, error) {
	a, err := scanAnchor(e.w.QueryRowContext(ctx, qAnchorCompletePending, nowMicros(), seq))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("complete pending anchor %d: %w", seq, store.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("complete pending anchor %d: %w", seq, err)
	}
	return a, nil
}

// AnchorFailPending implements store.Executor.
func (e executor) AnchorFailPending(ctx context.Context, p store.AnchorFailParams) (store.Anchor, error) {
	a, err := scanAnchor(e.w.QueryRowContext(ctx, qAnchorFailPending, p.Reason, p.Seq))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("fail pending anchor %d: %w", p.Seq, store.ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("fail pending anchor %d: %w", p.Seq, err)
	}
	return a, nil
}

func queryLedgerBatches(ctx context.Context, q querier, query string, args ...any) ([]store.LedgerBatch, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.LedgerBatch
	for rows.Next() {
		b, err := scanLedgerBatch(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func scanLedgerBatch(r scanner) (store.LedgerBatch, error) {
	var b store.LedgerBatch
	var dataChange, subErr, subMsg, dlt, service, owner sql.NullString
	var serialized, hist string
	var claimExp, submittedAt sql.NullInt64
	var created, next int64
	err := r.Scan(&b.HeaderSignature, &dataChange, &b.SignerPublicKey, &b.Trace, &serialized, &b.Submitted,
		&subErr, &subMsg, &dlt, &claimExp, &created, &service, &b.AnchorSeq, &owner, &b.ClaimTerm, &b.Attempts,
		&next, &b.MaybeSubmitted, &hist, &submittedAt)
	if err != nil {
		return b, err
	}
	b.DataChangeID, b.SubmissionError, b.SubmissionErrorMessage = dataChange.String, subErr.String, subMsg.String
	b.DLTStatus, b.ServiceID, b.ClaimOwner = dlt.String, service.String, owner.String
	b.ClaimExpires, b.SubmittedAt = fromNullMicros(claimExp), fromNullMicros(submittedAt)
	b.Created, b.NextAttemptAt = fromMicros(created), fromMicros(next)
	b.History = parseHistory(hist)
	if b.SerializedBatch, err = hex.DecodeString(serialized); err != nil {
		return b, fmt.Errorf("batch %.16s: serialized_batch is not hex: %w", b.HeaderSignature, err)
	}
	return b, nil
}

func attempted(b bool) int {
	if b {
		return 1
	}
	return 0
}

// historyStamp is the time prefix of a history line written by SQL.
func historyStamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
