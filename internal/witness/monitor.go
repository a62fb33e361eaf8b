package witness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// MonitorResult is what one monitor run did.
type MonitorResult struct {
	Checked, Completed, Reoffered, Waiting, Failed int
}

// RunTask is the anchor status monitor's run (task MonitorTaskID): it looks at the pending
// anchors whose check time has come, at most MaxRecords of them.
func (w *Witnessing) RunTask(ctx context.Context, _ int64) error {
	_, err := w.runOnce(ctx)
	return err
}

// Interval is the monitor's interval.
func (w *Witnessing) Interval() time.Duration { return w.cfg.MonitorInterval }

func (w *Witnessing) runOnce(ctx context.Context) (MonitorResult, error) {
	var res MonitorResult
	due, err := w.st.WitnessAnchorsDue(ctx, w.cfg.MaxRecords)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, wa := range due {
		if ctx.Err() != nil {
			break
		}
		outcome, err := w.check(ctx, wa)
		if err != nil {
			errs = append(errs, fmt.Errorf("check anchor %d: %w", wa.Seq, err))
			continue
		}
		res.Checked++
		w.m.monitored.WithLabelValues(outcome).Inc()
		switch outcome {
		case "completed":
			res.Completed++
		case "reoffered":
			res.Reoffered++
		case "waiting":
			res.Waiting++
		case "failed":
			res.Failed++
		}
	}
	return res, errors.Join(errs...)
}

// check decides about one pending anchor, in one transaction: complete it if its proofs now
// satisfy the policy (the policy may have changed); otherwise offer it to witnesses not asked
// yet, leaving out the asked ones that did not answer; when none is left and the anchor has
// waited past --max-witness-delay plus the grace period, fail it and give its operations back
// to the queue. Two concurrent checks cannot both act: every outcome is a conditional update
// of the anchor (completing or failing needs it pending) or harmless to repeat (an Offer).
func (w *Witnessing) check(ctx context.Context, wa store.WitnessAnchor) (string, error) {
	outcome := ""
	var requeued int
	err := w.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		requeued = 0
		a, err := tx.AnchorGet(ctx, wa.Seq)
		if err != nil {
			return err
		}
		if a.Status != store.AnchorPending {
			outcome = "completed"
			return nil
		}
		done, err := w.completeIfSatisfied(ctx, tx, wa.Seq)
		if err != nil || done {
			outcome = "completed"
			return err
		}
		rows, err := tx.AnchorWitnessList(ctx, wa.Seq)
		if err != nil {
			return err
		}
		policy, err := LoadPolicy(ctx, tx)
		if err != nil {
			return err
		}
		// Candidates as they are now: system witnesses invited since are eligible too, and
		// withdrawn ones are not asked again.
		var batchOrigins []string
		for _, r := range rows {
			if r.Batch {
				batchOrigins = append(batchOrigins, r.Actor)
			}
		}
		candidates, err := w.candidates(ctx, tx, batchOrigins)
		if err != nil {
			return err
		}
		var silent, asked []string
		for _, r := range rows {
			if r.Selected {
				asked = append(asked, r.Actor)
				if !r.ProofCounts() {
					// Silent, or its log promise was broken: ask another.
					silent = append(silent, r.Actor)
				}
			}
		}
		for i := range candidates {
			c := &candidates[i]
			if i := slices.IndexFunc(rows, func(r store.AnchorWitness) bool { return r.Actor == c.URI }); i >= 0 {
				c.Selected, c.HasProof = rows[i].Selected, rows[i].ProofCounts()
			}
		}
		selected, selErr := policy.Select(w.random(), candidates, silent...)
		var additional []string
		for _, u := range actorsOf(selected) {
			if !slices.Contains(asked, u) {
				additional = append(additional, u)
			}
		}
		if selErr == nil && len(additional) > 0 {
			outcome = "reoffered"
			merged := mergeRows(rows, rowsOf(wa.Seq, candidates))
			if err := w.offer(ctx, tx, wa, merged, additional, "reselect"); err != nil {
				return err
			}
			return tx.WitnessAnchorSetCheck(ctx, wa.Seq, w.cfg.GracePeriod)
		}
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		if now.Before(wa.CreatedAt.Add(w.cfg.MaxWitnessDelay+w.cfg.GracePeriod)) || w.promiseOpen(policy, rows, now) {
			outcome = "waiting"
			if len(asked) == 0 {
				// Nobody to wait for: look again at the next run, for a witness that became eligible.
				return tx.WitnessAnchorSetCheck(ctx, wa.Seq, 0)
			}
			return tx.WitnessAnchorSetCheck(ctx, wa.Seq, w.cfg.GracePeriod)
		}
		reason := fmt.Sprintf("no eligible witness answered within %s (policy %s, %d asked)", w.cfg.MaxWitnessDelay+w.cfg.GracePeriod, policy.String(), len(asked))
		failed, err := tx.AnchorFailPending(ctx, store.AnchorFailParams{Seq: wa.Seq, Reason: reason})
		if errors.Is(err, store.ErrNotFound) {
			outcome = "completed"
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.requeue(ctx, tx, failed); err != nil {
			return err
		}
		outcome, requeued = "failed", failed.OpCount
		return nil
	})
	if err != nil {
		return "", err
	}
	if outcome == "failed" {
		w.m.failed.Inc()
		w.m.requeuedOps.Add(float64(requeued))
		w.cfg.Logger.WarnContext(ctx, "anchor failed for lack of witnesses; its operations are queued again",
			"anchor_seq", wa.Seq, "operations", requeued)
	}
	return outcome, nil
}

// promiseOpen reports whether, under LogRequired, an asked witness's proof waits for the proof
// monitor's verdict on its log promise: the anchor is not failed under it, since verified it
// may complete the anchor, and broken it makes the anchor due at once to ask another witness.
// A promise the monitor cannot settle (the log unreadable) is waited for only until its
// deadline plus the clock skew and the grace period.
func (w *Witnessing) promiseOpen(policy Policy, rows []store.AnchorWitness, now time.Time) bool {
	if !policy.LogRequired {
		return false
	}
	for _, r := range rows {
		if r.Selected && r.HasLog && r.ProofCounts() && r.Promise != nil && r.PromiseVerifiedAt == nil &&
			now.Before(r.Promise.Deadline.Add(w.cfg.MaxClockSkew+w.cfg.GracePeriod)) {
			return true
		}
	}
	return false
}

// mergeRows keeps the recorded rows (their selection, Offers and proofs) and adds candidates
// not recorded yet, with their current roles.
func mergeRows(recorded, current []store.AnchorWitness) []store.AnchorWitness {
	out := slices.Clone(recorded)
	for _, c := range current {
		i := slices.IndexFunc(out, func(r store.AnchorWitness) bool { return r.Actor == c.Actor })
		if i < 0 {
			out = append(out, c)
			continue
		}
		out[i].Batch, out[i].System, out[i].HasLog = out[i].Batch || c.Batch, out[i].System || c.System, c.HasLog
	}
	return out
}
