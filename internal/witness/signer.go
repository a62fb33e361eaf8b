package witness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// AppendFunc appends an entry to this domain's witness log and returns its index.
type AppendFunc func(ctx context.Context, entry []byte) (uint64, error)

// Signer is the witness side: it answers the Offers of the domains that invited this domain
// to witness with an Accept carrying its proof of the offered anchor credential.
type Signer struct {
	cfg         Config
	st          store.Store
	post        PostTxFunc
	isInvitedBy func(ctx context.Context, actor string) (bool, error)
	// appendLog, if set, logs each credential before it is signed.
	appendLog AppendFunc
	m         *metrics
	now       func() time.Time
}

// NewSigner returns the witness side. isInvitedBy reports whether we accepted actor's Invite;
// appendLog is nil without a witness log.
func NewSigner(cfg Config, st store.Store, post PostTxFunc, isInvitedBy func(ctx context.Context, actor string) (bool, error), appendLog AppendFunc) (*Signer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if post == nil || isInvitedBy == nil {
		return nil, errors.New("new signer: outbox and invitation check are required")
	}
	m, err := newSignerMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Signer{cfg: cfg, st: st, post: post, isInvitedBy: isInvitedBy, appendLog: appendLog, m: m, now: time.Now}, nil
}

// AuthorizeOffer refuses an Offer from a domain that did not invite us (Orb signs for anyone
// who passes its inbox authentication).
func (s *Signer) AuthorizeOffer(ctx context.Context, in Inbound) error {
	ok, err := s.isInvitedBy(ctx, in.Actor)
	if err != nil {
		return err
	}
	if !ok {
		s.m.signed.WithLabelValues("refused").Inc()
		return fmt.Errorf("%w: %s did not invite us to witness its anchors", ErrForbidden, in.Actor)
	}
	return nil
}

// HandleOffer checks an Offer and answers it with an Accept holding our proof, once: the
// Accept and the record of the answered Offer commit together, and a repeated Offer (the same
// id) is not answered again.
func (s *Signer) HandleOffer(ctx context.Context, in Inbound) error {
	if err := s.AuthorizeOffer(ctx, in); err != nil {
		return err
	}
	offer := in.Activity
	if _, err := s.st.WitnessedGet(ctx, offer.ID); err == nil {
		s.m.signed.WithLabelValues("duplicate").Inc()
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	link, cred, err := s.check(offer)
	if err != nil {
		s.m.signed.WithLabelValues("refused").Inc()
		return err
	}
	var logIndex *int64
	var promise *activity.ReceiptLog
	if s.appendLog != nil {
		// Logged before it is signed: a proof never exists for a credential the log lacks. A
		// retry after a failure here may log it twice, which either index proves. The entry
		// is what the origin recomputes from the credential it offered (LogEntry).
		entry, err := LogEntry(cred)
		if err != nil {
			return err
		}
		idx, err := s.appendLog(ctx, entry)
		if err != nil {
			return fmt.Errorf("log credential %s: %w", cred.ID(), err)
		}
		i := int64(idx)
		logIndex = &i
		if s.cfg.LogOrigin != "" {
			promise = &activity.ReceiptLog{Origin: s.cfg.LogOrigin, Index: idx}
		}
	}
	id := s.cfg.Identity
	now := s.now().UTC()
	proof, err := vc.CreateProof(cred, id.Key, vc.ProofOptions{VerificationMethod: id.verificationMethod(), Domain: id.Endpoint, Created: now})
	if err != nil {
		return err
	}
	attachment, err := json.Marshal(vc.NewProofAttachment(proof))
	if err != nil {
		return err
	}
	end := now.Add(s.cfg.MaxWitnessDelay)
	accept := &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams},
		Type:    activity.TypeAccept,
		Actor:   id.ActorIRI,
		To:      activity.Strings{in.Actor, activity.PublicIRI},
		Object: &activity.Object{Activity: &activity.Activity{
			Context: activity.Strings{activity.ContextActivityStreams},
			ID:      offer.ID, Type: activity.TypeOffer, Actor: offer.Actor, To: offer.To, Target: offer.Target,
			StartTime: offer.StartTime, EndTime: offer.EndTime,
			Object: activity.IRIObject(link.Anchor),
		}},
		Result: &activity.Object{AnchorReceipt: &activity.AnchorReceipt{
			Context: activity.Strings{activity.ContextActivityAnchors}, Type: activity.TypeAnchorReceipt,
			InReplyTo: link.Anchor, StartTime: &now, EndTime: &end, Attachment: []json.RawMessage{attachment},
			// The promise: the credential is in our log at this index, by end.
			Log: promise,
		}},
	}
	err = s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		acceptID, err := s.post(ctx, tx, accept)
		if err != nil {
			return err
		}
		return tx.WitnessedInsert(ctx, store.Witnessed{OfferID: offer.ID, Offerer: in.Actor, Hashlink: link.Anchor, VCID: cred.ID(),
			AcceptID: acceptID, Proof: attachment, LogIndex: logIndex})
	})
	if errors.Is(err, store.ErrConflict) {
		s.m.signed.WithLabelValues("duplicate").Inc()
		return nil // answered meanwhile by another instance
	}
	if err != nil {
		return fmt.Errorf("answer Offer %s: %w", offer.ID, err)
	}
	s.m.signed.WithLabelValues("signed").Inc()
	s.cfg.Logger.InfoContext(ctx, "anchor witnessed", "offer", offer.ID, "origin", in.Actor, "anchor", link.Anchor)
	return nil
}

// check applies the witness's checks to an Offer and returns the offered link and credential
// (without proofs).
func (s *Signer) check(offer *activity.Activity) (*activity.Link, *vc.Credential, error) {
	now := s.now()
	skew := s.cfg.MaxClockSkew
	switch {
	case offer.Target == nil || offer.Target.IRI != activity.AnchorWitnessIRI:
		return nil, nil, invalidf("Offer target must be %s", activity.AnchorWitnessIRI)
	case offer.StartTime == nil || offer.EndTime == nil:
		return nil, nil, invalidf("Offer needs startTime and endTime")
	case now.After(offer.EndTime.Add(skew)):
		return nil, nil, invalidf("Offer %s expired at %s", offer.ID, offer.EndTime.Format(time.RFC3339))
	case offer.StartTime.After(now.Add(skew)):
		return nil, nil, invalidf("Offer %s starts in the future (%s)", offer.ID, offer.StartTime.Format(time.RFC3339))
	case offer.Object == nil || offer.Object.Linkset == nil || len(offer.Object.Linkset.Linkset) != 1:
		return nil, nil, invalidf("Offer object must be a linkset of one anchor link")
	}
	link := &offer.Object.Linkset.Linkset[0]
	if len(link.Replies) == 0 || link.Replies[0].Type != activity.MediaTypeJSONLD {
		return nil, nil, invalidf("anchor link replies must hold the credential (%s)", activity.MediaTypeJSONLD)
	}
	content, err := link.Replies[0].Content(vc.MaxDocumentSize)
	if err != nil {
		return nil, nil, invalidf("anchor link replies: %v", err)
	}
	cred, err := vc.ParseCredential(content)
	if err != nil {
		return nil, nil, invalidf("%v", err)
	}
	subject, err := cred.AnchorSubject()
	if err != nil {
		return nil, nil, invalidf("%v", err)
	}
	cs := activity.CredentialSubject{HRef: subject.HRef, Profile: subject.Profile, Anchor: subject.Anchor, Rel: "linkset"}
	if err := cs.Check(link); err != nil {
		return nil, nil, invalidf("%v", err)
	}
	if subject.HRef != link.Anchor {
		return nil, nil, invalidf("credential names anchor %q, the link is %q", subject.HRef, link.Anchor)
	}
	cred = cred.WithoutProofs()
	if err := cred.CheckStrict(); err != nil {
		return nil, nil, invalidf("%v", err)
	}
	return link, cred, nil
}
