package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store"
)

// ErrNotFollowing: Unfollow (or RemoveWitness) of an actor we do not follow (or did not invite).
var ErrNotFollowing = errors.New("federation: not following that actor")

// RelationshipView is a relationship as the admin API shows it.
type RelationshipView struct {
	Actor      string    `json:"actor"`
	Status     string    `json:"status"`
	ActivityID string    `json:"activityId"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// BrokenPromises counts, for a witness, the log promises the proof monitor found broken;
	// a witness with one is faulty.
	BrokenPromises int64 `json:"brokenPromises,omitempty"`
	Faulty         bool  `json:"faulty,omitempty"`
}

// AcceptListView is an accept-list entry as the admin API shows it.
type AcceptListView struct {
	Type  string `json:"type"`
	Actor string `json:"actor"`
}

// Follow asks target to let us follow it: a Follow is posted and the relationship is pending
// until the answer. It returns once both are durable. Following an actor that already accepted
// us posts nothing.
func (s *Service) Follow(ctx context.Context, target string) (RelationshipView, error) {
	return s.request(ctx, "follow", store.RelationshipFollowing, target, &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams},
		Type:    activity.TypeFollow, To: activity.Strings{target}, Object: activity.IRIObject(target),
	})
}

// InviteWitness asks target to witness our anchors: an Invite (object AnchorWitness, target the
// invitee, as Orb sends it) is posted and the witness relationship is pending until the answer.
func (s *Service) InviteWitness(ctx context.Context, target string) (RelationshipView, error) {
	return s.request(ctx, "invite", store.RelationshipWitness, target, &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams, activity.ContextActivityAnchors},
		Type:    activity.TypeInvite, To: activity.Strings{target},
		Object: activity.IRIObject(activity.AnchorWitnessIRI), Target: activity.IRIObject(target),
	})
}

// request posts a Follow or Invite and records the pending relationship in one transaction.
func (s *Service) request(ctx context.Context, op, kind, target string, req *activity.Activity) (RelationshipView, error) {
	if err := activity.ValidateActorIRI(target); err != nil {
		return RelationshipView{}, fmt.Errorf("%s: %w: %w", op, activity.ErrInvalid, err)
	}
	if target == s.actor {
		return RelationshipView{}, fmt.Errorf("%s: %w: that is us", op, activity.ErrInvalid)
	}
	r, err := s.st.RelationshipGet(ctx, kind, target)
	if err == nil && r.Status == store.RelationshipAccepted {
		return viewOf(r), nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return RelationshipView{}, fmt.Errorf("%s %s: %w", op, target, err)
	}
	err = s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		id, err := s.PostTx(ctx, tx, req)
		if err != nil {
			return err
		}
		return tx.RelationshipUpsert(ctx, store.RelationshipUpsertParams{
			Kind: kind, Actor: target, Status: store.RelationshipPending, ActivityID: id,
		})
	})
	if err != nil {
		return RelationshipView{}, fmt.Errorf("%s %s: %w", op, target, err)
	}
	s.cfg.Logger.InfoContext(ctx, "relationship requested", "kind", kind, "actor", target, "activity", req.ID)
	return RelationshipView{Actor: target, Status: store.RelationshipPending, ActivityID: req.ID, UpdatedAt: time.Now().UTC()}, nil
}

// Unfollow stops following target: an Undo of our Follow is posted and the relationship is
// removed, in one transaction.
func (s *Service) Unfollow(ctx context.Context, target string) error {
	return s.withdraw(ctx, "unfollow", store.RelationshipFollowing, target)
}

// RemoveWitness withdraws our invitation of target: an Undo of our Invite is posted and the
// witness relationship removed, in one transaction.
func (s *Service) RemoveWitness(ctx context.Context, target string) error {
	return s.withdraw(ctx, "remove witness", store.RelationshipWitness, target)
}

func (s *Service) withdraw(ctx context.Context, op, kind, target string) error {
	r, err := s.st.RelationshipGet(ctx, kind, target)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s %s: %w", op, target, ErrNotFollowing)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, target, err)
	}
	undo := &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams},
		Type:    activity.TypeUndo, To: activity.Strings{target},
	}
	if sent, err := s.outboxGet(ctx, r.ActivityID); err == nil {
		var req activity.Activity
		if err := json.Unmarshal(sent.Body, &req); err == nil {
			undo.Object = &activity.Object{Activity: &req}
		}
	}
	err = s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if undo.Object != nil {
			if _, err := s.PostTx(ctx, tx, undo); err != nil {
				return err
			}
		}
		return tx.RelationshipDelete(ctx, kind, target)
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, target, err)
	}
	s.cfg.Logger.InfoContext(ctx, "relationship withdrawn", "kind", kind, "actor", target)
	return nil
}

// Relationships lists the relationships of a kind, every status.
func (s *Service) Relationships(ctx context.Context, kind string) ([]RelationshipView, error) {
	var out []RelationshipView
	const page = 500
	for offset := int64(0); ; offset += page {
		rs, err := s.st.RelationshipList(ctx, store.RelationshipListParams{Kind: kind, Offset: offset, Limit: page})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", kind, err)
		}
		for _, r := range rs {
			out = append(out, viewOf(r))
		}
		if len(rs) < page {
			return out, nil
		}
	}
}

// markFaulty counts each witness's broken log promises (recorded by the witness package's proof
// monitor, read here from the store so that federation need not know about witnessing).
func (s *Service) markFaulty(ctx context.Context, witnesses []RelationshipView) error {
	broken, err := s.st.LogPromisesBroken(ctx)
	if err != nil {
		return err
	}
	for i := range witnesses {
		n := broken[witnesses[i].Actor]
		witnesses[i].BrokenPromises, witnesses[i].Faulty = n, n > 0
	}
	return nil
}

func viewOf(r store.Relationship) RelationshipView {
	return RelationshipView{Actor: r.Actor, Status: r.Status, ActivityID: r.ActivityID, UpdatedAt: r.UpdatedAt}
}

func checkListType(t string) error {
	if t != store.AcceptListFollow && t != store.AcceptListInviteWitness {
		return fmt.Errorf("%w: accept-list type %q: must be %s or %s", activity.ErrInvalid, t, store.AcceptListFollow, store.AcceptListInviteWitness)
	}
	return nil
}

// AdminRoutes returns the admin API of the federation, served on the admin listener:
//
//	GET    /admin/v1/following            our follows, every status
//	POST   /admin/v1/following            {"actor": IRI}: follow (returns once the Follow is durable)
//	DELETE /admin/v1/following?actor=IRI  unfollow
//	GET    /admin/v1/followers            who follows us
//	GET    /admin/v1/witnesses            the domains we invited to witness, every status
//	POST   /admin/v1/witnesses            {"actor": IRI}: invite to witness
//	DELETE /admin/v1/witnesses?actor=IRI  withdraw the invitation
//	GET    /admin/v1/witnessing           the domains whose anchors we witness
//	GET    /admin/v1/acceptlist[?type=T]  accept lists
//	POST   /admin/v1/acceptlist           {"type": T, "actor": IRI}
//	DELETE /admin/v1/acceptlist?type=T&actor=IRI
func (s *Service) AdminRoutes() func(mux httpapi.Router) {
	return func(mux httpapi.Router) {
		mux.HandleFunc("GET /admin/v1/following", s.adminList(store.RelationshipFollowing))
		mux.HandleFunc("GET /admin/v1/followers", s.adminList(store.RelationshipFollower))
		mux.HandleFunc("POST /admin/v1/following", s.adminFollow)
		mux.HandleFunc("DELETE /admin/v1/following", s.adminUnfollow)
		mux.HandleFunc("GET /admin/v1/witnesses", s.adminList(store.RelationshipWitness))
		mux.HandleFunc("GET /admin/v1/witnessing", s.adminList(store.RelationshipWitnessing))
		mux.HandleFunc("POST /admin/v1/witnesses", s.adminInvite)
		mux.HandleFunc("DELETE /admin/v1/witnesses", s.adminRemoveWitness)
		mux.HandleFunc("GET /admin/v1/acceptlist", s.adminAcceptList)
		mux.HandleFunc("POST /admin/v1/acceptlist", s.adminAcceptListAdd)
		mux.HandleFunc("DELETE /admin/v1/acceptlist", s.adminAcceptListRemove)
	}
}

func (s *Service) adminList(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list, err := s.Relationships(r.Context(), kind)
		if err == nil && kind == store.RelationshipWitness {
			err = s.markFaulty(r.Context(), list)
		}
		if err != nil {
			s.adminError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, "application/json", struct {
			Items []RelationshipView `json:"items"`
		}{Items: nonNil(list)})
	}
}

// adminBody is the body of the admin POSTs.
type adminBody struct {
	Actor string `json:"actor"`
	Type  string `json:"type"`
}

func readAdminBody(r *http.Request) (adminBody, error) {
	var b adminBody
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("%w: body: %w", activity.ErrInvalid, err)
	}
	return b, nil
}

func (s *Service) adminFollow(w http.ResponseWriter, r *http.Request) {
	b, err := readAdminBody(r)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	s.audit(r, "follow", b.Actor)
	v, err := s.Follow(r.Context(), b.Actor)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", v)
}

func (s *Service) adminInvite(w http.ResponseWriter, r *http.Request) {
	b, err := readAdminBody(r)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	s.audit(r, "invite witness", b.Actor)
	v, err := s.InviteWitness(r.Context(), b.Actor)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", v)
}

func (s *Service) adminRemoveWitness(w http.ResponseWriter, r *http.Request) {
	actor := r.URL.Query().Get("actor")
	s.audit(r, "remove witness", actor)
	if err := s.RemoveWitness(r.Context(), actor); err != nil {
		s.adminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]string{"removed": actor})
}

func (s *Service) adminUnfollow(w http.ResponseWriter, r *http.Request) {
	actor := r.URL.Query().Get("actor")
	s.audit(r, "unfollow", actor)
	if err := s.Unfollow(r.Context(), actor); err != nil {
		s.adminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]string{"unfollowed": actor})
}

func (s *Service) adminAcceptList(w http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("type")
	if t != "" {
		if err := checkListType(t); err != nil {
			s.adminError(w, r, err)
			return
		}
	}
	list, err := s.st.AcceptListList(r.Context(), t)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	out := make([]AcceptListView, len(list))
	for i, e := range list {
		out[i] = AcceptListView{Type: e.Type, Actor: e.Actor}
	}
	writeJSON(w, http.StatusOK, "application/json", struct {
		Items []AcceptListView `json:"items"`
	}{Items: out})
}

func (s *Service) adminAcceptListAdd(w http.ResponseWriter, r *http.Request) {
	b, err := readAdminBody(r)
	if err == nil {
		err = checkListType(b.Type)
	}
	if err == nil {
		if verr := activity.ValidateActorIRI(b.Actor); verr != nil {
			err = fmt.Errorf("%w: %w", activity.ErrInvalid, verr)
		}
	}
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	s.audit(r, "acceptlist add "+b.Type, b.Actor)
	added, err := s.st.AcceptListInsert(r.Context(), b.Type, b.Actor)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]any{"type": b.Type, "actor": b.Actor, "added": added})
}

func (s *Service) adminAcceptListRemove(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	t, actor := q.Get("type"), q.Get("actor")
	if err := checkListType(t); err != nil {
		s.adminError(w, r, err)
		return
	}
	s.audit(r, "acceptlist remove "+t, actor)
	removed, err := s.st.AcceptListDelete(r.Context(), t, actor)
	if err != nil {
		s.adminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", map[string]any{"type": t, "actor": actor, "removed": removed})
}

func (s *Service) audit(r *http.Request, action, actor string) {
	s.cfg.Logger.InfoContext(r.Context(), "admin action", "action", action, "actor", actor, "client", r.RemoteAddr)
}

func (s *Service) adminError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, activity.ErrInvalid):
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_parameter", err.Error())
	case errors.Is(err, ErrNotFollowing):
		httpapi.WriteError(w, http.StatusNotFound, "not_found", err.Error())
	default:
		s.cfg.Logger.ErrorContext(r.Context(), "admin federation", "error", err)
		w.Header().Set("Retry-After", "1")
		httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "federation admin unavailable")
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
