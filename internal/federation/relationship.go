package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
)

// The built-in handlers keep the relationships: Follow and Invite ask for one (we answer with
// Accept or Reject, by policy), Accept and Reject answer ours, Undo ends the peer's.

func (s *Service) registerBuiltins() {
	s.handlers[activity.TypeFollow] = Handler{Authorize: s.authorizeFollow, Handle: s.handleFollow}
	s.handlers[activity.TypeInvite] = Handler{Authorize: s.authorizeInvite, Handle: s.handleInvite}
	s.handlers[activity.TypeAccept] = Handler{Authorize: s.authorizeAnswer, Handle: s.handleAnswer}
	s.handlers[activity.TypeReject] = Handler{Authorize: s.authorizeAnswer, Handle: s.handleAnswer}
	s.handlers[activity.TypeUndo] = Handler{Authorize: s.authorizeUndo, Handle: s.handleUndo}
	s.handlers[activity.TypeLike] = Handler{Authorize: s.authorizeLike, Handle: func(context.Context, Inbound) error { return nil }}
}

// authorizeLike takes a Like (it stays in the inbox collection; nothing here acts on it) only
// from a domain we have a relationship with. Orb posts a Like to an anchor's origin from every
// domain that processed the anchor, followers of followers included, so a Like from a stranger
// is not an attack: it is answered 202 and dropped, since a refusal would be retried.
func (s *Service) authorizeLike(ctx context.Context, in Inbound) error {
	ok, err := s.related(ctx, in.Actor)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: a Like from %s, with whom we have no relationship", errIgnored, in.Actor)
	}
	return nil
}

// related reports whether we have an accepted relationship of any kind with actor.
func (s *Service) related(ctx context.Context, actor string) (bool, error) {
	for _, kind := range []string{store.RelationshipFollower, store.RelationshipFollowing, store.RelationshipWitness, store.RelationshipWitnessing} {
		ok, err := s.hasRelationship(ctx, kind, actor)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", activity.ErrInvalid, fmt.Sprintf(format, args...))
}

// authorizeFollow refuses a Follow of anyone but us (400), as Orb does.
func (s *Service) authorizeFollow(_ context.Context, in Inbound) error {
	if in.Activity.Object.IRI != s.actor {
		return invalid("Follow object must be %s", s.actor)
	}
	return nil
}

// authorizeInvite refuses (400) an Invite that does not ask us to witness: its object must be
// AnchorWitness and its target us.
func (s *Service) authorizeInvite(_ context.Context, in Inbound) error {
	a := in.Activity
	if a.Object.IRI != activity.AnchorWitnessIRI {
		return invalid("Invite object must be %s", activity.AnchorWitnessIRI)
	}
	if a.Target == nil || a.Target.IRI != s.actor {
		return invalid("Invite target must be %s", s.actor)
	}
	return nil
}

// handleFollow accepts or rejects a follower by --follow-auth-policy. An accepted follower and
// our Accept are written in one transaction. A Follow from a follower we have is accepted again
// (the peer may have lost our first Accept), but at most once per AnswerInterval: a repeat
// sooner is recorded as the follower's latest Follow (its Undo must match) and not answered.
func (s *Service) handleFollow(ctx context.Context, in Inbound) error {
	return s.answer(ctx, in, store.RelationshipFollower, store.AcceptListFollow, s.cfg.FollowAuthPolicy)
}

// handleInvite accepts or rejects an invitation to witness by --invite-witness-auth-policy.
func (s *Service) handleInvite(ctx context.Context, in Inbound) error {
	return s.answer(ctx, in, store.RelationshipWitnessing, store.AcceptListInviteWitness, s.cfg.InviteWitnessAuthPolicy)
}

func (s *Service) answer(ctx context.Context, in Inbound, kind, list, policy string) error {
	a := in.Activity
	allowed := policy == PolicyAcceptAll
	if !allowed {
		var err error
		if allowed, err = s.st.AcceptListContains(ctx, list, in.Actor); err != nil {
			return err
		}
	}
	reply := &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams},
		Type:    activity.TypeReject,
		To:      activity.Strings{in.Actor},
		Object:  &activity.Object{Activity: a},
	}
	if allowed {
		reply.Type = activity.TypeAccept
	}
	repeat := false
	err := s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if allowed {
			answer, err := tx.RelationshipAnswer(ctx, store.RelationshipAnswerParams{
				Kind: kind, Actor: in.Actor, Status: store.RelationshipAccepted, ActivityID: a.ID, Interval: s.cfg.AnswerInterval,
			})
			if err != nil {
				return err
			}
			if repeat = !answer; repeat {
				return nil
			}
		}
		_, err := s.PostTx(ctx, tx, reply)
		return err
	})
	if err != nil {
		return fmt.Errorf("answer %s %s: %w", a.Type, a.ID, err)
	}
	if repeat {
		s.cfg.Logger.DebugContext(ctx, "repeated request recorded, answered less than an interval ago", "activity", a.Type,
			"actor", in.Actor, "interval", s.cfg.AnswerInterval)
		return nil
	}
	s.cfg.Logger.InfoContext(ctx, "answered", "activity", a.Type, "actor", in.Actor, "answer", reply.Type)
	return nil
}

// authorizeAnswer takes an Accept or Reject only from a domain we sent what it answers: the
// embedded activity must be ours, in our outbox, and addressed to the answering actor (403
// otherwise, and nothing is stored: an unsolicited answer would only be parked later, at an
// operator's cost). Then it must be a Follow or Invite of ours, or of a type whose answers a
// registered answer handler takes.
func (s *Service) authorizeAnswer(ctx context.Context, in Inbound) error {
	var req *activity.Activity
	if in.Activity.Object != nil {
		req = in.Activity.Object.Activity
	}
	if req == nil {
		return invalid("%s must embed the activity it answers", in.Activity.Type)
	}
	if req.Actor != s.actor {
		return fmt.Errorf("%w: %s answers a %s by %q, not by us", ErrForbidden, in.Activity.Type, req.Type, req.Actor)
	}
	sent, err := s.sentTo(ctx, req.ID, in.Actor)
	if err != nil {
		return err
	}
	if !sent {
		return fmt.Errorf("%w: %s answers %s, which we did not send to %s", ErrForbidden, in.Activity.Type, req.ID, in.Actor)
	}
	if h, ok := s.delegatedAnswer(in.Activity); ok {
		if h.Authorize == nil {
			return nil
		}
		return h.Authorize(ctx, in)
	}
	_, err = s.answered(in.Activity)
	return err
}

// delegatedAnswer returns the registered handler of an Accept or Reject of one of our
// activities that is neither a Follow nor an Invite.
func (s *Service) delegatedAnswer(a *activity.Activity) (Handler, bool) {
	req := a.Object.Activity
	if req == nil || req.Type == activity.TypeFollow || req.Type == activity.TypeInvite || req.Actor != s.actor {
		return Handler{}, false
	}
	return s.answerHandler(req.Type)
}

// answered returns the Follow or Invite an Accept or Reject answers.
func (s *Service) answered(a *activity.Activity) (*activity.Activity, error) {
	req := a.Object.Activity
	if req == nil {
		return nil, invalid("%s must embed the activity it answers", a.Type)
	}
	if req.Actor != s.actor {
		return nil, fmt.Errorf("%w: %s answers a %s by %q, not by us", ErrForbidden, a.Type, req.Type, req.Actor)
	}
	if req.Type != activity.TypeFollow && req.Type != activity.TypeInvite {
		// No answer handler is registered for this type (see RegisterAnswerHandler).
		return nil, invalid("%s of a %s is not handled", a.Type, req.Type)
	}
	return req, nil
}

// handleAnswer records a peer's Accept or Reject of our Follow (following) or Invite (witness).
// The embedded activity must be in our outbox, as ours, with the same type and object, and
// addressed to the peer that answers: an Accept nobody asked for changes nothing.
func (s *Service) handleAnswer(ctx context.Context, in Inbound) error {
	a := in.Activity
	if h, ok := s.delegatedAnswer(a); ok {
		return h.Handle(ctx, in)
	}
	req, err := s.answered(a)
	if err != nil {
		return err
	}
	sent, err := s.outboxGet(ctx, req.ID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s of %s, which is not in our outbox", ErrForbidden, a.Type, req.ID)
	}
	if err != nil {
		return err
	}
	var ours activity.Activity
	if err := json.Unmarshal(sent.Body, &ours); err != nil {
		return fmt.Errorf("read our %s %s: %w", req.Type, req.ID, err)
	}
	if ours.Type != req.Type || ours.Actor != req.Actor || objectIRI(ours.Object) != objectIRI(req.Object) ||
		!addressedTo(&ours, in.Actor) {
		return fmt.Errorf("%w: %s embeds a %s that does not match ours", ErrForbidden, a.Type, req.Type)
	}
	kind := store.RelationshipFollowing
	if req.Type == activity.TypeInvite {
		kind = store.RelationshipWitness
	}
	status := store.RelationshipAccepted
	if a.Type == activity.TypeReject {
		status = store.RelationshipRejected
	}
	if kind == store.RelationshipWitness && status == store.RelationshipAccepted {
		s.mu.RLock()
		f := s.witnessAccepted
		s.mu.RUnlock()
		if f != nil {
			f(ctx, in.Actor)
		}
	}
	_, err = s.st.RelationshipSetStatus(ctx, store.RelationshipSetStatusParams{Kind: kind, Actor: in.Actor, ActivityID: req.ID, Status: status})
	if errors.Is(err, store.ErrNotFound) && status == store.RelationshipAccepted {
		// An Accept of an earlier request of ours, while a later one waits: the peer answers a
		// repeated request at most once an interval (as this service does), so the Accept of the
		// later one may never come. The peer accepted us either way, as Orb takes any Follow of
		// its outbox. (After an unfollow and a new Follow, a late Accept of the first completes
		// the second too; the peer handles our Undo and the new Follow in order, and its answer
		// to the new one settles the relationship.)
		if r, gerr := s.st.RelationshipGet(ctx, kind, in.Actor); gerr == nil && r.Status == store.RelationshipPending {
			_, err = s.st.RelationshipSetStatus(ctx, store.RelationshipSetStatusParams{Kind: kind, Actor: in.Actor, ActivityID: r.ActivityID, Status: status})
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		// We withdrew (or replaced) that request meanwhile.
		s.cfg.Logger.InfoContext(ctx, "answer to a withdrawn request", "answer", a.Type, "request", req.ID, "actor", in.Actor)
		return nil
	}
	if err != nil {
		return err
	}
	s.cfg.Logger.InfoContext(ctx, "relationship answered", "kind", kind, "actor", in.Actor, "status", status)
	return nil
}

// objectIRI is the IRI an object names: its IRI, or the id of what it embeds.
func objectIRI(o *activity.Object) string {
	switch {
	case o == nil:
		return ""
	case o.IRI != "":
		return o.IRI
	case o.Activity != nil:
		return o.Activity.ID
	}
	return ""
}

// addressedTo reports whether a was sent to actor: in to, or as its object or target.
func addressedTo(a *activity.Activity, actor string) bool {
	return a.To.Contains(actor) || objectIRI(a.Object) == actor || objectIRI(a.Target) == actor
}

// authorizeUndo requires an Undo to come from the actor of what it undoes (403 otherwise) and to
// embed a Follow or Invite (400 otherwise), and takes it only where there is something to undo:
// a relationship the peer asked for, or its request still waiting in our inbox (403 otherwise).
func (s *Service) authorizeUndo(ctx context.Context, in Inbound) error {
	req, err := s.undone(in)
	if err != nil {
		return err
	}
	kind := store.RelationshipFollower
	if req.Type == activity.TypeInvite {
		kind = store.RelationshipWitnessing
	}
	_, err = s.st.RelationshipGet(ctx, kind, in.Actor)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if req.ID != "" {
		row, err := s.st.ActivityInboxGetByActivity(ctx, req.ID)
		if err == nil && row.Actor == in.Actor {
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return fmt.Errorf("%w: an Undo of a %s from %s, which has no relationship with us", ErrForbidden, req.Type, in.Actor)
}

// sentTo reports whether the outbox activity id was addressed to actor: in its to, or as its
// object or target. Only those members are decoded (an Offer embeds a whole linkset).
func (s *Service) sentTo(ctx context.Context, id, actor string) (bool, error) {
	if id == "" {
		return false, nil
	}
	sent, err := s.outboxGet(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var ours struct {
		To     activity.Strings `json:"to"`
		Object json.RawMessage  `json:"object"`
		Target json.RawMessage  `json:"target"`
	}
	if err := json.Unmarshal(sent.Body, &ours); err != nil {
		return false, fmt.Errorf("read our activity %s: %w", id, err)
	}
	return ours.To.Contains(actor) || namesIRI(ours.Object, actor) || namesIRI(ours.Target, actor), nil
}

// namesIRI reports whether a JSON member is iri, or an object whose id is iri.
func namesIRI(raw json.RawMessage, iri string) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s == iri
	}
	var o struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(raw, &o) == nil && o.ID == iri
}

func (s *Service) undone(in Inbound) (*activity.Activity, error) {
	req := in.Activity.Object.Activity
	if req == nil {
		return nil, invalid("Undo must embed the activity it undoes")
	}
	if req.Type != activity.TypeFollow && req.Type != activity.TypeInvite {
		return nil, invalid("Undo of a %s is not handled", req.Type)
	}
	if req.Actor != in.Actor {
		return nil, fmt.Errorf("%w: an Undo must come from the actor of the %s it undoes", ErrForbidden, req.Type)
	}
	return req, nil
}

// handleUndo ends a follower's (or an inviter's) relationship, if it is the one the undone
// activity started. Nothing to undo is not an error: the Undo may be a repeat.
func (s *Service) handleUndo(ctx context.Context, in Inbound) error {
	req, err := s.undone(in)
	if err != nil {
		return err
	}
	kind := store.RelationshipFollower
	if req.Type == activity.TypeInvite {
		kind = store.RelationshipWitnessing
	}
	r, err := s.st.RelationshipGet(ctx, kind, in.Actor)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if req.ID != "" && r.ActivityID != req.ID {
		s.cfg.Logger.InfoContext(ctx, "undo of a superseded request", "kind", kind, "actor", in.Actor, "undone", req.ID, "current", r.ActivityID)
		return nil
	}
	if err := s.st.RelationshipDelete(ctx, kind, in.Actor); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	s.cfg.Logger.InfoContext(ctx, "relationship ended", "kind", kind, "actor", in.Actor)
	return nil
}
