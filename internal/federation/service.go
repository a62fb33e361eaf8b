package federation

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
)

// Errors a handler or an Authorize function returns, wrapped, to say how the activity ends.
var (
	// ErrForbidden: the (well-signed) actor may not do what the activity asks. At the inbox it
	// answers 403; in a handler it parks the activity at once.
	ErrForbidden = errors.New("federation: forbidden")
	// errIgnored: the activity is taken (202) and dropped, not stored: nothing here would use
	// it, and refusing it would only make its sender retry.
	errIgnored = errors.New("federation: ignored")
)

// Permanent marks a handler error that no retry can fix: the activity is parked at once.
func Permanent(err error) error { return pubsub.Permanent(err) }

// Source says how an activity reached the inbox.
type Source string

// Sources of inbox activities.
const (
	SourceLive Source = store.InboxSourceLive
	SourceSync Source = store.InboxSourceSync
)

// Inbound is an activity of the inbox, as a handler receives it.
type Inbound struct {
	// Activity is the parsed, validated activity.
	Activity *activity.Activity
	// Body is the activity exactly as received.
	Body []byte
	// Actor is the activity's actor. Live, it is the verified signer of the request; from the
	// sync, the sync checked it is the actor whose outbox it read (or us, for our own Creates
	// read back from a follower's inbox).
	Actor string
	// From is the signer (live) or the actor whose collection the sync read.
	From   string
	Source Source
	// Seq is the inbox row; zero while Authorize runs.
	Seq int64
}

// HandlerFunc handles or authorizes an inbox activity.
type HandlerFunc func(ctx context.Context, in Inbound) error

// Handler is what the service does with one activity type.
type Handler struct {
	// Authorize, if set, runs in POST /inbox once the signature and the actor are checked and
	// before the activity is stored: an error wrapping ErrForbidden answers 403, one wrapping
	// activity.ErrInvalid 400, any other 503; nothing is stored. It does not run for activities
	// the sync queues.
	Authorize HandlerFunc
	// Handle runs in the inbox processor, at least once per stored activity, so it MUST be
	// idempotent. An error is retried on the redelivery schedule and then parked; one that is
	// Permanent or wraps ErrForbidden is parked at once.
	Handle HandlerFunc
}

// Service is a domain's ActivityPub service: its actor, outbox, inbox and relationships.
type Service struct {
	cfg      Config
	st       store.Store
	client   *peer.Client
	verifier *httpsig.Verifier
	m        *metrics
	wake     *waker
	quota    quota

	actor  string
	pub    ed25519.PublicKey
	pemKey string

	mu       sync.RWMutex
	handlers map[activity.Type]Handler
	// didInfo answers WebFinger for did:orb resources (RegisterDIDInfo); nil: it does not.
	didInfo DIDInfoFunc
	// answers handle Accepts and Rejects of our activities other than Follow and Invite, by the
	// type of the activity answered (an Offer's Accept carries a witness's proof).
	answers map[activity.Type]Handler
	// witnessAccepted runs as a witness's Accept of our invitation is handled (OnWitnessAccepted).
	witnessAccepted func(ctx context.Context, actor string)
	started         bool

	peerLogs peerLogs
}

// New returns the service of the domain at cfg.ExternalEndpoint, which signs with cfg.Key and
// reaches other domains through client. The built-in handlers (Follow, Accept, Reject, Undo,
// Invite) are registered; others are added with RegisterHandler before the loops run.
func New(cfg Config, st store.Store, client *peer.Client) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new federation service: %w", err)
	}
	if client == nil {
		return nil, errors.New("new federation service: no peer client")
	}
	pub := cfg.Key.Public().(ed25519.PublicKey)
	pemKey, err := httpsig.EncodePublicKeyPEM(pub)
	if err != nil {
		return nil, fmt.Errorf("new federation service: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, st: st, client: client, m: m, actor: cfg.ExternalEndpoint + ServicePath, pub: pub, pemKey: pemKey,
		handlers: map[activity.Type]Handler{}, answers: map[activity.Type]Handler{}, wake: newWaker(cfg.Broker, cfg.Logger),
		quota: newQuota(cfg),
	}
	s.verifier, err = httpsig.NewVerifier(httpsig.VerifierConfig{
		ResolveKeyFunc: client.ResolveKey, MaxClockSkew: cfg.MaxClockSkew, MaxBodyBytes: cfg.MaxInboxBytes, NowFunc: cfg.NowFunc,
	})
	if err != nil {
		return nil, fmt.Errorf("new federation service: %w", err)
	}
	s.registerBuiltins()
	return s, nil
}

// ActorIRI is our actor: <external endpoint>/services/anchord.
func (s *Service) ActorIRI() string { return s.actor }

// FollowersIRI is our followers collection; in an activity's to, it addresses every accepted
// follower at the time of posting.
func (s *Service) FollowersIRI() string { return s.actor + activity.PathFollowers }

// WitnessesIRI is our witnesses collection; in to, it addresses every accepted witness.
func (s *Service) WitnessesIRI() string { return s.actor + activity.PathWitnesses }

// KeyID is the id of our HTTP-signature key.
func (s *Service) KeyID() string { return s.actor + activity.PathMainKey }

// Endpoint is the external endpoint, without a trailing slash.
func (s *Service) Endpoint() string { return s.cfg.ExternalEndpoint }

// PublicKey is the domain's public key.
func (s *Service) PublicKey() ed25519.PublicKey { return s.pub }

// ReleaseOwnClaims takes back, at start, the inbox rows and deliveries this instance's id still
// holds claimed: the id is kept across restarts (an embedded instance's is fixed, a cluster
// instance's is its host and API address), so what its previous life was handling when it died
// is handled again at once rather than after the claims' TTL.
func (s *Service) ReleaseOwnClaims(ctx context.Context) error {
	n, err := s.st.ActivityReleaseClaims(ctx, s.cfg.InstanceID)
	if err != nil {
		return fmt.Errorf("release this instance's claims: %w", err)
	}
	if n > 0 {
		s.cfg.Logger.InfoContext(ctx, "took back inbox and delivery claims of a previous run", "claims", n)
	}
	return nil
}

// Client is the signed client towards other domains.
func (s *Service) Client() *peer.Client { return s.client }

// RegisterHandler sets the handler of an activity type. It must be called before the inbox
// processor runs; a type has one handler.
func (s *Service) RegisterHandler(t activity.Type, h Handler) error {
	if !t.IsActivity() {
		return fmt.Errorf("register handler: %q is not an activity type", t)
	}
	if h.Handle == nil {
		return fmt.Errorf("register handler for %s: no Handle", t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("register handler for %s: the inbox processor already runs", t)
	}
	if _, dup := s.handlers[t]; dup {
		return fmt.Errorf("register handler for %s: already registered", t)
	}
	s.handlers[t] = h
	return nil
}

// RegisterAnswerHandler sets the handler of Accepts and Rejects that answer one of our
// activities of type t, other than Follow and Invite (whose answers the service keeps itself):
// e.g. the Accept of an Offer, which carries a witness's proof. The service checks first that
// the answered activity is ours (its actor is us); the handler checks the rest (that it is in
// our outbox, that it was addressed to the answering actor). Like RegisterHandler, before Run.
func (s *Service) RegisterAnswerHandler(t activity.Type, h Handler) error {
	if !t.IsActivity() || t == activity.TypeFollow || t == activity.TypeInvite {
		return fmt.Errorf("register answer handler: %q is not an activity type answered outside the service", t)
	}
	if h.Handle == nil {
		return fmt.Errorf("register answer handler for %s: no Handle", t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("register answer handler for %s: the inbox processor already runs", t)
	}
	if _, dup := s.answers[t]; dup {
		return fmt.Errorf("register answer handler for %s: already registered", t)
	}
	s.answers[t] = h
	return nil
}

// OnWitnessAccepted registers f, run when a witness's Accept of our invitation is handled and
// before the relationship is recorded as accepted, so that what f learns about the witness (the
// witness backend reads whether it keeps a log) is known to this instance by the time an anchor
// can select it. f runs in the inbox processor and must be bounded by ctx; what it fails to
// learn is for it to learn later. Like RegisterHandler, before Run.
func (s *Service) OnWitnessAccepted(f func(ctx context.Context, actor string)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("on witness accepted: the inbox processor already runs")
	}
	s.witnessAccepted = f
	return nil
}

func (s *Service) answerHandler(t activity.Type) (Handler, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.answers[t]
	return h, ok
}

func (s *Service) handler(t activity.Type) (Handler, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.handlers[t]
	return h, ok
}

// RequireFollowing is an Authorize function for activities only a domain we follow may send
// (Create, Announce): anyone else gets ErrForbidden.
func (s *Service) RequireFollowing(ctx context.Context, in Inbound) error {
	ok, err := s.IsFollowing(ctx, in.Actor)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s is not a domain we follow", ErrForbidden, in.Actor)
	}
	return nil
}

// IsFollowing reports whether we follow actor (accepted).
func (s *Service) IsFollowing(ctx context.Context, actor string) (bool, error) {
	return s.hasRelationship(ctx, store.RelationshipFollowing, actor)
}

// IsFollower reports whether actor follows us (accepted).
func (s *Service) IsFollower(ctx context.Context, actor string) (bool, error) {
	return s.hasRelationship(ctx, store.RelationshipFollower, actor)
}

func (s *Service) hasRelationship(ctx context.Context, kind, actor string) (bool, error) {
	r, err := s.st.RelationshipGet(ctx, kind, actor)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return r.Status == store.RelationshipAccepted, nil
}

// Followers lists the actors that follow us (accepted).
func (s *Service) Followers(ctx context.Context) ([]string, error) {
	return listActors(ctx, s.st, store.RelationshipFollower)
}

// Following lists the actors we follow (accepted).
func (s *Service) Following(ctx context.Context) ([]string, error) {
	return listActors(ctx, s.st, store.RelationshipFollowing)
}

// Witnesses lists the actors that witness our anchors: they accepted our Invite.
func (s *Service) Witnesses(ctx context.Context) ([]string, error) {
	return listActors(ctx, s.st, store.RelationshipWitness)
}

// Witnessing lists the actors whose anchors we witness: we accepted their Invite.
func (s *Service) Witnessing(ctx context.Context) ([]string, error) {
	return listActors(ctx, s.st, store.RelationshipWitnessing)
}

// IsWitnessing reports whether we accepted actor's Invite to witness its anchors.
func (s *Service) IsWitnessing(ctx context.Context, actor string) (bool, error) {
	return s.hasRelationship(ctx, store.RelationshipWitnessing, actor)
}

// listActors lists the actors of the accepted relationships of a kind.
func listActors(ctx context.Context, st store.Executor, kind string) ([]string, error) {
	rs, err := listRelationships(ctx, st, kind)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Actor
	}
	return out, nil
}

// listRelationships lists the accepted relationships of a kind, page by page.
func listRelationships(ctx context.Context, st store.Executor, kind string) ([]store.Relationship, error) {
	const page = 500
	var out []store.Relationship
	for offset := int64(0); ; offset += page {
		rs, err := st.RelationshipList(ctx, store.RelationshipListParams{Kind: kind, Status: store.RelationshipAccepted, Offset: offset, Limit: page})
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
		if len(rs) < page {
			return out, nil
		}
	}
}

// Post stores a in our outbox with one delivery per recipient and returns its id once that has
// committed. Recipients are a's to: the Public IRI is skipped, FollowersIRI and WitnessesIRI
// expand to the accepted followers and witnesses of the moment, any other IRI is an actor; our
// own actor and exclude are dropped. Post fills id (<actor>/activities/<uuid>) and published
// (now) when absent and refuses an actor other than ours.
func (s *Service) Post(ctx context.Context, a *activity.Activity, exclude ...string) (string, error) {
	var id string
	err := s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		var err error
		id, err = s.PostTx(ctx, tx, a, exclude...)
		return err
	})
	return id, err
}

// PostTx is Post inside the caller's transaction: the activity and its deliveries commit or roll
// back with tx, and the deliverers are woken once tx commits. All of the posting runs in tx;
// a caller that builds an anchor's Create ahead of its transaction uses Prepare instead.
func (s *Service) PostTx(ctx context.Context, tx store.Executor, a *activity.Activity, exclude ...string) (string, error) {
	o, err := s.Prepare(a, nil, exclude...)
	if err != nil {
		return "", err
	}
	return o.PostTx(ctx, tx)
}

// Outgoing is an activity laid out for our outbox by Prepare, to be posted by its PostTx.
//
// Posting is split so that what costs time happens before the caller's transaction: an anchor's
// Create of 10,000 operations embeds some 460 KB of linkset, and writing it and working out
// the stored form (outboxbody.Plan: the linkset found, re-encoded, compared, hashed) take
// milliseconds, which on SQLite every other commit would wait for. What must see the
// transaction stays in PostTx: the recipients (the followers and witnesses of the moment), the
// check that CAS holds the linkset (it is put there in the same transaction) and the inserts.
type Outgoing struct {
	s       *Service
	a       *activity.Activity
	exclude []string
	body    []byte
	// planned says stored was worked out against the linkset's CAS bytes; without them, the
	// stored form is worked out in PostTx from what CAS holds (outboxbody.Compact).
	planned bool
	stored  outboxbody.Compaction
}

// Prepare completes a as Post does (id, actor, published, @context), checks it and writes its
// body, outside any transaction. linkset is the CAS content of the linkset a's AnchorEvent
// embeds, which the caller puts in CAS in the transaction that posts it; nil if the caller has
// none to give. a must not change until the Outgoing is posted.
func (s *Service) Prepare(a *activity.Activity, linkset []byte, exclude ...string) (*Outgoing, error) {
	body, err := s.complete(a)
	if err != nil {
		return nil, fmt.Errorf("post %s: %w", a.Type, err)
	}
	o := &Outgoing{s: s, a: a, exclude: slices.Clone(exclude), body: body}
	if linkset != nil {
		o.planned = true
		o.stored = outboxbody.Plan(a, body, linkset)
	}
	return o, nil
}

// PostTx posts the activity inside the caller's transaction, as Service.PostTx does, and
// returns its id. An anchor's Create is stored without the linkset it embeds when CAS holds
// it in tx: the outbox would otherwise hold every anchor's linkset a second time.
func (o *Outgoing) PostTx(ctx context.Context, tx store.Executor) (string, error) {
	s, a := o.s, o.a
	recipients, err := s.recipients(ctx, tx, a, o.exclude)
	if err != nil {
		return "", fmt.Errorf("post %s: %w", a.Type, err)
	}
	var stored []byte
	if o.planned {
		stored, err = o.stored.Stored(ctx, tx)
	} else {
		stored, err = outboxbody.Compact(ctx, tx, a, o.body)
	}
	if err != nil {
		return "", fmt.Errorf("post %s: %w", a.Type, err)
	}
	if _, err := tx.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{
		ActivityID: a.ID, Type: string(a.Type), Body: stored, Public: a.To.Contains(activity.PublicIRI), Recipients: recipients,
	}); err != nil {
		return "", fmt.Errorf("post %s: %w", a.Type, err)
	}
	id, typ := a.ID, a.Type
	store.OnCommit(ctx, func() {
		s.m.outbox.WithLabelValues(string(typ)).Inc()
		if len(recipients) > 0 {
			s.wake.outbox(id)
		}
	})
	return id, nil
}

// outboxGet returns an activity of our outbox with its body as posted: every reader of our
// outbox reads it so, whatever form it is stored in (outboxbody).
func (s *Service) outboxGet(ctx context.Context, id string) (store.OutboxActivity, error) {
	a, err := s.st.ActivityOutboxGet(ctx, id)
	if err != nil {
		return a, err
	}
	if a.Body, err = outboxbody.Expand(ctx, s.st, a.Body); err != nil {
		return a, fmt.Errorf("outbox activity %s: %w", id, err)
	}
	return a, nil
}

// complete fills in what a lacks, checks it and returns its JSON.
func (s *Service) complete(a *activity.Activity) ([]byte, error) {
	switch a.Actor {
	case "":
		a.Actor = s.actor
	case s.actor:
	default:
		return nil, fmt.Errorf("actor %q is not ours", a.Actor)
	}
	if a.ID == "" {
		a.ID = s.actor + "/activities/" + uuid.NewString()
	}
	if a.Published == nil {
		now := s.cfg.NowFunc().UTC().Truncate(time.Second)
		a.Published = &now
	}
	if len(a.Context) == 0 {
		a.Context = activity.Strings{activity.ContextActivityStreams}
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(a)
}

// recipients resolves a's recipients in tx: the actors of its to, the followers and witnesses
// it addresses those of the moment, without us, the Public IRI and exclude.
func (s *Service) recipients(ctx context.Context, tx store.Executor, a *activity.Activity, exclude []string) ([]string, error) {
	skip := map[string]bool{s.actor: true, activity.PublicIRI: true}
	for _, x := range exclude {
		skip[x] = true
	}
	var recipients []string
	add := func(iri string) {
		if !skip[iri] {
			skip[iri] = true
			recipients = append(recipients, iri)
		}
	}
	for _, to := range a.To {
		var kind string
		switch to {
		case s.FollowersIRI():
			kind = store.RelationshipFollower
		case s.WitnessesIRI():
			kind = store.RelationshipWitness
		default:
			if !skip[to] {
				if err := activity.ValidateActorIRI(to); err != nil {
					return nil, fmt.Errorf("recipient: %w", err)
				}
			}
			add(to)
			continue
		}
		actors, err := listActors(ctx, tx, kind)
		if err != nil {
			return nil, err
		}
		for _, iri := range actors {
			add(iri)
		}
	}
	return recipients, nil
}
