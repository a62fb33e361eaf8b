package submitter

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
)

// outcome is how the settling of one claimed batch ended.
type outcome int

const (
	outcomeAccepted outcome = iota
	outcomeHeld
	outcomeRejected
	outcomeRetried
	outcomeDeferred
	outcomeParked
	outcomeFenced
	outcomeFailed
)

// ParkedBatch is the payload of a ledger_batch dead letter. When a batch is parked its anchor
// has failed and its operations have been given back to the queue, in the same transaction:
// the batch is kept for inspection and must not be resubmitted (its operations will be
// anchored again in a new batch).
type ParkedBatch struct {
	BatchID   string `json:"batch_id"`
	AnchorSeq int64  `json:"anchor_seq"`
	Anchor    string `json:"anchor"`
	ServiceID string `json:"service_id,omitempty"`
	// SerializedBatch is the BatchList, hex-encoded.
	SerializedBatch string `json:"serialized_batch"`
}

// recordFunc writes the outcome decide chose. It runs after the ledger request slot is given
// back, so that database latency (a group commit in flight) never holds ledger concurrency.
type recordFunc func() outcome

// decide talks to the ledger about one claimed batch (a status check when it may already be
// there, then a submission) and returns how to record the answer. ctx is the caller's
// context, work ends at the claim deadline; the writes run on neither, so that they happen
// after a deadline or a shutdown too.
func (s *Submitter) decide(ctx, work context.Context, b store.LedgerBatch, check heldCheck) recordFunc {
	log := s.logger.With("batch_id", shortID(b.HeaderSignature), "anchor_seq", b.AnchorSeq)
	if check.asked {
		switch {
		case check.err != nil:
			return func() outcome {
				return s.relinquish(ctx, log, b, relinquishArgs{attempted: true, backoff: s.backoff(b.Attempts + 1), maybe: true,
					line: "the ledger could not say whether it holds the batch: " + check.err.Error()}, "retry", outcomeRetried)
			}
		case check.status != ledger.StatusUnknown:
			return func() outcome {
				return s.markSubmitted(ctx, log, b, false,
					"an earlier attempt got through: the ledger holds the batch ("+string(check.status)+"); not sent again", outcomeHeld)
			}
		}
	}
	if b.Attempts >= s.cfg.MaxAttempts {
		return func() outcome {
			return s.park(ctx, log, b, false, fmt.Sprintf("%d attempts made, the last ones by claims that expired without an outcome", b.Attempts))
		}
	}
	if work.Err() != nil {
		return func() outcome { return s.deferBatch(ctx, log, b) }
	}

	rctx, cancel := context.WithTimeout(work, s.cfg.RequestTimeout)
	start := time.Now()
	r := s.client.Submit(rctx, b.SerializedBatch, b.ServiceID)
	cancel()
	class := r.Class.String()
	s.m.submissions.WithLabelValues(class).Inc()
	s.m.submitLatency.WithLabelValues(class).Observe(time.Since(start).Seconds())

	attempt := b.Attempts + 1
	line := "attempt " + strconv.Itoa(attempt) + ": " + r.String()
	switch r.Class {
	case ledger.Accepted:
		return func() outcome { return s.markSubmitted(ctx, log, b, true, "", outcomeAccepted) }
	case ledger.Rejected:
		return func() outcome { return s.reject(ctx, log, b, r, line) }
	}

	maybe := b.MaybeSubmitted || r.MaybeProcessed
	if ctx.Err() != nil {
		// Shutdown cut the request: not the batch's fault, and the next claimer checks first.
		return func() outcome {
			return s.relinquish(ctx, log, b, relinquishArgs{maybe: maybe, line: line}, "deferred", outcomeDeferred)
		}
	}
	if r.MaybeProcessed && work.Err() == nil {
		// No answer, or "may or may not have been processed": ask before sending it again.
		rctx, cancel := context.WithTimeout(work, s.cfg.RequestTimeout)
		statuses, err := s.client.Statuses(rctx, []string{b.HeaderSignature}, b.ServiceID)
		cancel()
		switch {
		case err != nil:
			line += "; status check failed: " + err.Error()
		case statuses[b.HeaderSignature].Status != ledger.StatusUnknown:
			line += "; the ledger holds the batch (" + string(statuses[b.HeaderSignature].Status) + ")"
			return func() outcome { return s.markSubmitted(ctx, log, b, true, line, outcomeAccepted) }
		default:
			line += "; status check: UNKNOWN"
		}
	}
	if attempt >= s.cfg.MaxAttempts {
		return func() outcome {
			return s.park(ctx, log, b, true, fmt.Sprintf("gave up after %d attempts; last: %s", attempt, line))
		}
	}
	return func() outcome {
		return s.relinquish(ctx, log, b, relinquishArgs{attempted: true, backoff: s.backoff(attempt), maybe: maybe, line: line},
			"retry", outcomeRetried)
	}
}

// backoff is the wait before the attempt after attempt number n failed.
func (s *Submitter) backoff(n int) time.Duration {
	return loop.Jitter(loop.Backoff(n, s.cfg.BackoffInitial, s.cfg.BackoffMultiplier, s.cfg.BackoffMax), 0.1)
}

// deferBatch gives back a claim whose batch was not sent.
func (s *Submitter) deferBatch(ctx context.Context, log *slog.Logger, b store.LedgerBatch) outcome {
	return s.relinquish(ctx, log, b, relinquishArgs{maybe: b.MaybeSubmitted}, "deferred", outcomeDeferred)
}

func (s *Submitter) markSubmitted(ctx context.Context, log *slog.Logger, b store.LedgerBatch, attempted bool, line string, o outcome) outcome {
	err := s.group.Do(ctx, func(ctx context.Context, tx store.Executor) error {
		return tx.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{
			Claim: b.Claim(), Attempted: attempted, History: appendHistory(b.History, line),
		})
	})
	if err == nil && o == outcomeHeld {
		s.m.held.Inc()
	}
	// If the acceptance cannot be recorded, the next claimer must ask the ledger first.
	return s.recorded(ctx, log, b, err, o, relinquishArgs{attempted: attempted, maybe: true, line: line})
}

// reject records a 400 or 404, fails the anchor and gives its operations back to the queue.
func (s *Submitter) reject(ctx context.Context, log *slog.Logger, b store.LedgerBatch, r ledger.Result, line string) outcome {
	code := store.LedgerErrorBadRequest
	if r.HTTPStatus == http.StatusNotFound {
		code = store.LedgerErrorNotFound
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	var requeued bool
	err := s.st.InTx(wctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.LedgerBatchMarkFailed(ctx, store.LedgerBatchMarkFailedParams{
			Claim: b.Claim(), Error: code, Message: r.Message, Attempted: true, History: appendHistory(b.History, line),
		}); err != nil {
			return err
		}
		var err error
		requeued, err = failAnchor(ctx, tx, s.cfg.RequeueFunc, log, b.AnchorSeq, "the ledger rejected batch "+shortID(b.HeaderSignature)+": "+r.String())
		return err
	})
	if err == nil {
		log.InfoContext(ctx, "ledger rejected batch; anchor failed", "answer", r.String(), "operations_requeued", requeued)
		if requeued {
			s.m.anchorsFailed.WithLabelValues("rejected").Inc()
		}
	}
	return s.recorded(ctx, log, b, err, outcomeRejected,
		relinquishArgs{attempted: true, backoff: s.backoff(b.Attempts + 1), maybe: b.MaybeSubmitted, line: line})
}

// park ends a batch whose attempts ran out: the batch is marked failed and parked in
// dead_letters with its history, and its anchor fails and gives its operations back to the
// queue, all in one transaction.
func (s *Submitter) park(ctx context.Context, log *slog.Logger, b store.LedgerBatch, attempted bool, reason string) outcome {
	payload, err := json.Marshal(ParkedBatch{BatchID: b.HeaderSignature, AnchorSeq: b.AnchorSeq, Anchor: b.DataChangeID,
		ServiceID: b.ServiceID, SerializedBatch: hex.EncodeToString(b.SerializedBatch)})
	if err != nil {
		return s.recorded(ctx, log, b, fmt.Errorf("encode parked batch: %w", err), outcomeParked, relinquishArgs{maybe: b.MaybeSubmitted})
	}
	history := appendHistory(b.History, "parked: "+reason)
	attempts := b.Attempts
	if attempted {
		attempts++
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	var requeued bool
	err = s.st.InTx(wctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.LedgerBatchMarkFailed(ctx, store.LedgerBatchMarkFailedParams{
			Claim: b.Claim(), Error: store.LedgerErrorParked, Message: reason, Attempted: attempted, History: history,
		}); err != nil {
			return err
		}
		if _, err := tx.DeadLetterInsert(ctx, store.DeadLetter{Kind: store.DeadLetterLedgerBatch, Ref: b.HeaderSignature,
			Payload: payload, Reason: reason, Attempts: attempts, History: history}); err != nil {
			return err
		}
		var err error
		requeued, err = failAnchor(ctx, tx, s.cfg.RequeueFunc, log, b.AnchorSeq, "ledger batch "+shortID(b.HeaderSignature)+" parked: "+reason)
		return err
	})
	if err == nil {
		s.m.parked.Inc()
		if requeued {
			s.m.anchorsFailed.WithLabelValues("parked").Inc()
		}
		log.WarnContext(ctx, "ledger batch parked; anchor failed", "reason", reason, "attempts", attempts, "operations_requeued", requeued)
	}
	return s.recorded(ctx, log, b, err, outcomeParked, relinquishArgs{attempted: attempted, backoff: s.cfg.BackoffMax, maybe: b.MaybeSubmitted})
}

type relinquishArgs struct {
	attempted bool
	backoff   time.Duration
	maybe     bool
	line      string
}

func (s *Submitter) relinquish(ctx context.Context, log *slog.Logger, b store.LedgerBatch, a relinquishArgs, reason string, o outcome) outcome {
	err := s.relinquishClaim(ctx, b, a)
	if err == nil {
		s.m.relinquished.WithLabelValues(reason).Inc()
		log.DebugContext(ctx, "claim relinquished", "reason", reason, "retry_in", a.backoff, "last", a.line)
		return o
	}
	if errors.Is(err, store.ErrLeaseLost) {
		s.m.fenced.Inc()
		log.WarnContext(ctx, "claim was taken over; nothing recorded", "error", err)
		return outcomeFenced
	}
	s.m.writeErrors.Inc()
	log.ErrorContext(ctx, "relinquish claim; it will expire", "error", err)
	return outcomeFailed
}

func (s *Submitter) relinquishClaim(ctx context.Context, b store.LedgerBatch, a relinquishArgs) error {
	return s.group.Do(ctx, func(ctx context.Context, tx store.Executor) error {
		return tx.LedgerBatchRelinquish(ctx, store.LedgerBatchRelinquishParams{
			Claim: b.Claim(), Attempted: a.attempted, Backoff: a.backoff, MaybeSubmitted: a.maybe,
			History: appendHistory(b.History, a.line),
		})
	})
}

// recorded turns the error of an outcome's write into the outcome: a fenced write means the
// claim was taken over; any other failure relinquishes the claim with fallback (or leaves it
// to expire), so the batch is tried again.
func (s *Submitter) recorded(ctx context.Context, log *slog.Logger, b store.LedgerBatch, err error, o outcome, fallback relinquishArgs) outcome {
	switch {
	case err == nil:
		return o
	case errors.Is(err, store.ErrLeaseLost):
		s.m.fenced.Inc()
		log.WarnContext(ctx, "claim was taken over; outcome not recorded", "error", err)
		return outcomeFenced
	}
	s.m.writeErrors.Inc()
	if rerr := s.relinquishClaim(ctx, b, fallback); rerr != nil {
		log.ErrorContext(ctx, "record outcome; the claim will expire", "error", err, "relinquish_error", rerr)
		return outcomeFailed
	}
	s.m.relinquished.WithLabelValues("write_failed").Inc()
	log.ErrorContext(ctx, "record outcome; claim relinquished", "error", err)
	return outcomeFailed
}

func writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
}

// appendHistory returns h with a time-stamped line added (none when line is empty), keeping
// the newest historyLimit lines.
func appendHistory(h []string, line string) []string {
	if line == "" {
		return h
	}
	out := append(slices.Clone(h), time.Now().UTC().Format(time.RFC3339)+" "+line)
	if len(out) > historyLimit {
		out = out[len(out)-historyLimit:]
	}
	return out
}

// shortID shortens a 128-character batch id for logs and messages.
func shortID(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}
