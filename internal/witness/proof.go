package witness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// Inbound is an inbox activity handed to witnessing: the activity and its verified actor.
type Inbound struct {
	Activity *activity.Activity
	Actor    string
}

// ProofOutcome is what became of one witness's proof.
type ProofOutcome string

// Proof outcomes (the label of anchord_witness_proofs_total).
const (
	ProofAdded       ProofOutcome = "added"
	ProofDuplicate   ProofOutcome = "duplicate"
	ProofLate        ProofOutcome = "late"
	ProofUnselected  ProofOutcome = "unselected"
	ProofOutOfWindow ProofOutcome = "out_of_window"
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// HandleAccept handles a witness's Accept of one of our Offers (its AnchorReceipt carries the
// proof). It checks the Offer is ours and was sent to the witness, that the receipt answers
// the anchor we offered, that the proof was made in the Offer's window and verifies with the
// witness's own key; it then records the proof and, once the policy holds, completes the
// anchor — in one transaction, so that completion happens once however many instances receive
// proofs at the same time. It is idempotent.
func (w *Witnessing) HandleAccept(ctx context.Context, in Inbound) (ProofOutcome, error) {
	acc := in.Activity
	req := acc.Object.Activity
	if req == nil || req.Type != activity.TypeOffer {
		return "", invalidf("Accept must embed the Offer it answers")
	}
	if acc.Result == nil || acc.Result.AnchorReceipt == nil {
		return "", invalidf("Accept of an Offer must carry an AnchorReceipt result")
	}
	receipt := acc.Result.AnchorReceipt
	if receipt.StartTime == nil || receipt.EndTime == nil || len(receipt.Attachment) != 1 {
		return "", invalidf("AnchorReceipt needs startTime, endTime and exactly one attachment")
	}
	sent, err := w.st.ActivityOutboxGet(ctx, req.ID)
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: Accept of %s, which is not in our outbox", ErrForbidden, req.ID)
	}
	if err != nil {
		return "", err
	}
	// The stored form is outboxbody's to decide: read as posted, whatever it is.
	body, err := outboxbody.Expand(ctx, w.st, sent.Body)
	if err != nil {
		return "", fmt.Errorf("read our Offer %s: %w", req.ID, err)
	}
	var offer activity.Activity
	if err := json.Unmarshal(body, &offer); err != nil {
		return "", fmt.Errorf("read our Offer %s: %w", req.ID, err)
	}
	if offer.Type != activity.TypeOffer || !offer.To.Contains(in.Actor) || offer.Object == nil || offer.Object.Linkset == nil ||
		len(offer.Object.Linkset.Linkset) != 1 || offer.EndTime == nil {
		return "", fmt.Errorf("%w: %s is not an Offer of ours to %s", ErrForbidden, req.ID, in.Actor)
	}
	link := offer.Object.Linkset.Linkset[0]
	if receipt.InReplyTo != link.Anchor {
		return "", invalidf("AnchorReceipt inReplyTo %q is not the offered anchor %q", receipt.InReplyTo, link.Anchor)
	}
	vcID, err := offeredCredentialID(&link)
	if err != nil {
		return "", fmt.Errorf("read our Offer %s: %w", req.ID, err)
	}
	wa, err := w.st.WitnessAnchorByVCID(ctx, vcID)
	if err != nil {
		return "", fmt.Errorf("anchor of Offer %s: %w", req.ID, err)
	}
	proof, err := vc.ParseProofAttachment(receipt.Attachment[0])
	if err != nil {
		return "", invalidf("%v", err)
	}
	cred, err := vc.ParseCredential(wa.Credential)
	if err != nil {
		return "", fmt.Errorf("anchor %d credential: %w", wa.Seq, err)
	}
	created, err := proof.CreatedTime()
	if err != nil {
		return "", invalidf("%v", err)
	}
	skew := w.cfg.MaxClockSkew
	if created.Before(cred.IssuanceDate().Add(-skew)) || created.After(offer.EndTime.Add(skew)) {
		// Orb ignores such a proof as well; a later Offer (re-selection) may bring a good one.
		w.m.proofs.WithLabelValues(string(ProofOutOfWindow)).Inc()
		w.cfg.Logger.WarnContext(ctx, "witness proof outside its window ignored", "anchor_seq", wa.Seq, "witness", in.Actor, "created", created)
		return ProofOutOfWindow, nil
	}
	resolve, err := w.keys(in.Actor)
	if err != nil {
		return "", err
	}
	if err := vc.VerifyProof(ctx, cred, proof, resolve); err != nil {
		return "", err
	}
	promise := w.promise(receipt, offer.EndTime)
	verified, err := w.verifyOnArrival(ctx, in.Actor, cred, promise)
	if err != nil {
		return "", err
	}
	outcome, err := w.addProof(ctx, wa, in.Actor, receipt.Attachment[0], promise, verified)
	if err != nil {
		return "", err
	}
	w.m.proofs.WithLabelValues(string(outcome)).Inc()
	if verified && outcome == ProofAdded {
		w.promises.settled.WithLabelValues("verified").Inc()
	}
	return outcome, nil
}

// verifyOnArrival checks, before the proof is recorded and outside any transaction, whether
// the credential is already in the witness's log where the promise says: under LogRequired a
// logged proof counts only once that is verified, and a witness that waited for its
// checkpoint before answering (as ours does) has made it verifiable by now, so checking here
// spares the anchor a wait for the next run of the proof monitor. Without LogRequired the proof
// counts at once and the monitor checks the promise later, so nothing is read here.
func (w *Witnessing) verifyOnArrival(ctx context.Context, actor string, cred *vc.Credential, promise *store.LogPromise) (bool, error) {
	if promise == nil || w.promises == nil {
		return false, nil
	}
	policy, err := LoadPolicy(ctx, w.st)
	if err != nil {
		return false, err
	}
	if !policy.LogRequired {
		return false, nil
	}
	entry, err := LogEntry(cred)
	if err != nil {
		return false, fmt.Errorf("log entry of %s: %w", cred.ID(), err)
	}
	return w.promises.verifyOnArrival(ctx, actor, *promise, entry), nil
}

// promise is the log promise a receipt makes, nil if it names no log. Its deadline is the
// receipt's endTime, but no later than the witness could have set it: our Offer's endTime
// plus our --max-witness-delay and the clock skew, so that a witness cannot keep a promise
// open forever.
func (w *Witnessing) promise(r *activity.AnchorReceipt, offerEnd *time.Time) *store.LogPromise {
	if r.Log == nil {
		return nil
	}
	deadline := *r.EndTime
	if latest := offerEnd.Add(w.cfg.MaxWitnessDelay + w.cfg.MaxClockSkew); deadline.After(latest) {
		deadline = latest
	}
	return &store.LogPromise{Origin: r.Log.Origin, Index: int64(r.Log.Index), Deadline: deadline.UTC()}
}

// addProof records a verified proof, with its log promise if it has one (already verified if
// logVerified), and completes the anchor if the policy now holds.
func (w *Witnessing) addProof(ctx context.Context, wa store.WitnessAnchor, actor string, proof []byte, promise *store.LogPromise, logVerified bool) (ProofOutcome, error) {
	outcome := ProofAdded
	var completed bool
	err := w.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		outcome, completed = ProofAdded, false
		a, err := tx.AnchorGet(ctx, wa.Seq)
		if err != nil {
			return err
		}
		if a.Status != store.AnchorPending {
			outcome = ProofLate
			return nil
		}
		rows, err := tx.AnchorWitnessList(ctx, wa.Seq)
		if err != nil {
			return err
		}
		if !selected(rows, actor) {
			// Orb stores such a proof and never counts it; it is not kept here either.
			outcome = ProofUnselected
			return nil
		}
		added, err := tx.AnchorWitnessAddProof(ctx, wa.Seq, actor, proof)
		if err != nil {
			return err
		}
		if !added {
			outcome = ProofDuplicate
			return nil
		}
		if promise != nil {
			if err := tx.AnchorWitnessPromise(ctx, wa.Seq, actor, *promise); err != nil {
				return err
			}
			if logVerified {
				// The monitor's verdict, given early: the promise is no longer watched.
				if _, err := tx.LogPromiseSettle(ctx, wa.Seq, actor, false); err != nil {
					return err
				}
			}
		}
		completed, err = w.completeIfSatisfied(ctx, tx, wa.Seq)
		return err
	})
	if err == nil && outcome == ProofAdded && !completed {
		// Under READ COMMITTED (PostgreSQL) two transactions recording the last two proofs at
		// once each see only their own and neither completes the anchor. Looking again once
		// ours has committed sees every proof committed before, so whichever commits last
		// completes it; completion stays a conditional update, so it still happens once.
		err = w.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			var err error
			completed, err = w.completeIfSatisfied(ctx, tx, wa.Seq)
			return err
		})
	}
	if err != nil {
		return "", fmt.Errorf("add proof of %s to anchor %d: %w", actor, wa.Seq, err)
	}
	if completed {
		w.m.witnessTime.Observe(time.Since(wa.CreatedAt).Seconds())
		w.cfg.Logger.InfoContext(ctx, "witness policy satisfied", "anchor_seq", wa.Seq, "last_witness", actor)
	}
	return outcome, nil
}

// completeIfSatisfied completes pending anchor seq in tx if its proofs satisfy the current
// policy, and reports whether it did.
func (w *Witnessing) completeIfSatisfied(ctx context.Context, tx store.Executor, seq int64) (bool, error) {
	rows, err := tx.AnchorWitnessList(ctx, seq)
	if err != nil {
		return false, err
	}
	policy, err := LoadPolicy(ctx, tx)
	if err != nil {
		return false, err
	}
	if !policy.Evaluate(countable(witnessesOf(rows))) {
		return false, nil
	}
	if _, err := tx.WitnessAnchorComplete(ctx, seq); errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	failpoint.Hit(failpoint.WitnessBeforeCompleteCommit)
	w.m.completed.Inc()
	store.OnCommit(ctx, func() { w.completed(seq) })
	return true, nil
}

// countable keeps the proofs of selected witnesses only: an unasked domain's proof never counts.
func countable(ws []Witness) []Witness {
	for i := range ws {
		if !ws[i].Selected {
			ws[i].HasProof = false
		}
	}
	return ws
}

func selected(rows []store.AnchorWitness, actor string) bool {
	for _, r := range rows {
		if r.Actor == actor {
			return r.Selected
		}
	}
	return false
}

// offeredCredentialID reads the credential id from an offered link's replies.
func offeredCredentialID(l *activity.Link) (string, error) {
	if len(l.Replies) == 0 {
		return "", errors.New("offered link has no replies")
	}
	content, err := l.Replies[0].Content(vc.MaxDocumentSize)
	if err != nil {
		return "", err
	}
	c, err := vc.ParseCredential(content)
	if err != nil {
		return "", err
	}
	return c.ID(), nil
}

// Credential returns anchor seq's credential with this domain's proof and every proof its
// witnesses sent, in witness order: what the published anchor carries and /vc serves.
func Credential(ctx context.Context, st store.Executor, wa store.WitnessAnchor) (*vc.Credential, error) {
	c, err := vc.ParseCredential(wa.Credential)
	if err != nil {
		return nil, fmt.Errorf("credential of anchor %d: %w", wa.Seq, err)
	}
	rows, err := st.AnchorWitnessList(ctx, wa.Seq)
	if err != nil {
		return nil, err
	}
	attachments := [][]byte{wa.OriginProof}
	for _, r := range rows {
		if r.ProofCounts() && r.Selected {
			// A proof whose log promise was broken is not carried.
			attachments = append(attachments, r.Proof)
		}
	}
	for _, raw := range attachments {
		p, err := vc.ParseProofAttachment(raw)
		if err != nil {
			return nil, fmt.Errorf("credential of anchor %d: %w", wa.Seq, err)
		}
		if c, err = vc.AddProof(c, p); err != nil {
			return nil, fmt.Errorf("credential of anchor %d: %w", wa.Seq, err)
		}
	}
	return c, nil
}

// Link returns the link anchor seq is published with: the offered link whose replies hold the
// credential with every proof. ok is false when seq was not offered to witnesses.
func Link(ctx context.Context, st store.Executor, seq int64, mediaType string) (_ *activity.Link, ok bool, _ error) {
	wa, err := st.WitnessAnchorGet(ctx, seq)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	c, err := Credential(ctx, st, wa)
	if err != nil {
		return nil, false, err
	}
	var link activity.Link
	if err := json.Unmarshal(wa.Link, &link); err != nil {
		return nil, false, fmt.Errorf("link of anchor %d: %w", seq, err)
	}
	body, err := json.Marshal(c)
	if err == nil {
		// JCS, as the credential of every other link is written.
		body, err = jcs.Transform(body)
	}
	if err != nil {
		return nil, false, err
	}
	uri, err := activity.NewDataURI(body, mediaType)
	if err != nil {
		return nil, false, err
	}
	link.Replies = activity.Refs{{HRef: uri, Type: activity.MediaTypeJSONLD}}
	return &link, true, nil
}
