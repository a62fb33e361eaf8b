package witness

import (
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// testDomain is one domain of a test: its actor, did:web and real Ed25519 key.
type testDomain struct {
	actor, endpoint, did string
	key                  ed25519.PrivateKey
}

func newTestDomain(t testing.TB, name string) testDomain {
	t.Helper()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	endpoint := "https://" + name + ".example"
	did, err := vc.DIDWeb(endpoint)
	require.NoError(t, err)
	return testDomain{actor: endpoint + "/services/anchord", endpoint: endpoint, did: did, key: key}
}

func (d testDomain) identity() Identity {
	return Identity{ActorIRI: d.actor, Endpoint: d.endpoint, DID: d.did, Key: d.key}
}

func (d testDomain) resolver(t testing.TB) vc.ResolveKeyFunc {
	t.Helper()
	doc, err := vc.NewDIDDocument(d.did, d.key.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	return vc.DocumentResolver(doc)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// outbox is a PostTxFunc on the real store: the activity goes into the outbox inside tx, as
// the federation service posts it, and is remembered (as a peer would read it) once tx
// commits, so that a rolled-back post is not seen.
type outbox struct {
	actor string
	mu    sync.Mutex
	sent  []*activity.Activity
}

func (o *outbox) post(ctx context.Context, tx store.Executor, a *activity.Activity, exclude ...string) (string, error) {
	if a.ID == "" {
		a.ID = o.actor + "/activities/" + randomHex(8)
	}
	if a.Published == nil {
		now := time.Now().UTC().Truncate(time.Second)
		a.Published = &now
	}
	if err := a.Validate(); err != nil {
		return "", err
	}
	body, err := json.Marshal(a)
	if err != nil {
		return "", err
	}
	var recipients []string
	for _, to := range a.To {
		if to != activity.PublicIRI && to != o.actor && !slices.Contains(exclude, to) && !slices.Contains(recipients, to) {
			recipients = append(recipients, to)
		}
	}
	if _, err := tx.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{
		ActivityID: a.ID, Type: string(a.Type), Body: body, Public: a.To.Contains(activity.PublicIRI), Recipients: recipients,
	}); err != nil {
		return "", err
	}
	var read activity.Activity
	if err := json.Unmarshal(body, &read); err != nil {
		return "", err
	}
	store.OnCommit(ctx, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.sent = append(o.sent, &read)
	})
	return a.ID, nil
}

// ofType returns the committed posts of one type, in order.
func (o *outbox) ofType(typ activity.Type) []*activity.Activity {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*activity.Activity
	for _, a := range o.sent {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

// origin is domain A's origin side on a real store, with the witnesses it knows the keys of.
type origin struct {
	t   *testing.T
	st  store.Store
	dom testDomain
	w   *Witnessing
	out *outbox
	reg *prometheus.Registry

	mu        sync.Mutex
	known     map[string]testDomain
	requeue   RequeueFunc // the test's; nil records only
	requeued  []int64
	completed []int64
}

type originOption func(*Config)

func newOrigin(t *testing.T, st store.Store, opts ...originOption) *origin {
	t.Helper()
	o := &origin{t: t, st: st, dom: newTestDomain(t, "a"), reg: prometheus.NewRegistry(), known: map[string]testDomain{}}
	o.out = &outbox{actor: o.dom.actor}
	cfg := Config{Identity: o.dom.identity(), Logger: anchordtest.Logger(t), Registerer: o.reg}
	for _, opt := range opts {
		opt(&cfg)
	}
	keys := func(actor string) (vc.ResolveKeyFunc, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		d, ok := o.known[actor]
		if !ok {
			return nil, fmt.Errorf("%w: no keys for %s", ErrInvalid, actor)
		}
		return d.resolver(t), nil
	}
	requeue := func(ctx context.Context, tx store.Executor, a store.Anchor) error {
		o.mu.Lock()
		fn := o.requeue
		o.mu.Unlock()
		if fn != nil {
			if err := fn(ctx, tx, a); err != nil {
				return err
			}
		}
		store.OnCommit(ctx, func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.requeued = append(o.requeued, a.Seq)
		})
		return nil
	}
	w, err := New(cfg, st, o.out.post, keys, requeue, func(seq int64) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.completed = append(o.completed, seq)
	})
	require.NoError(t, err)
	o.w = w
	return o
}

// witness makes a domain named name that accepted our Invite (a system witness).
func (o *origin) witness(name string) testDomain {
	o.t.Helper()
	d := newTestDomain(o.t, name)
	o.mu.Lock()
	o.known[d.actor] = d
	o.mu.Unlock()
	require.NoError(o.t, o.st.RelationshipUpsert(context.Background(), store.RelationshipUpsertParams{
		Kind: store.RelationshipWitness, Actor: d.actor, Status: store.RelationshipAccepted, ActivityID: o.dom.actor + "/activities/invite-" + name,
	}))
	return d
}

func (o *origin) setPolicy(text string) {
	o.t.Helper()
	p, err := Parse(text)
	require.NoError(o.t, err)
	require.NoError(o.t, SavePolicy(context.Background(), o.st, p))
}

// anchor runs the backend in a batch writer's transaction for a batch of ops new DIDs.
func (o *origin) anchor(ops int) store.Anchor {
	o.t.Helper()
	req, rec := batchRequest(ops)
	var a store.Anchor
	require.NoError(o.t, o.st.InTx(context.Background(), func(ctx context.Context, tx store.Executor) error {
		var err error
		a, err = o.w.Anchor(ctx, tx, req, rec)
		return err
	}))
	return a
}

func batchRequest(ops int) (anchor.Request, anchor.Record) {
	core := []byte(`{"batch":"` + randomHex(16) + `"}`)
	cid := "bafkrei" + randomHex(20)
	req := anchor.Request{AnchorString: fmt.Sprintf("%d.%s", ops, cid), CoreIndexCID: cid, CoreIndex: core, OpCount: ops}
	for range ops {
		req.Ops = append(req.Ops, anchor.OpRef{Suffix: "EiA" + randomHex(20), Type: "create"})
	}
	return req, anchor.Record{Anchor: req.AnchorString, CoreIndex: cid, Time: time.Now().UTC()}
}

// offers returns the Offers committed so far.
func (o *origin) offers() []*activity.Activity { return o.out.ofType(activity.TypeOffer) }

func (o *origin) completedSeqs() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.completed)
}

func (o *origin) requeuedSeqs() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.requeued)
}

func (o *origin) rows(seq int64) map[string]store.AnchorWitness {
	o.t.Helper()
	rs, err := o.st.AnchorWitnessList(context.Background(), seq)
	require.NoError(o.t, err)
	out := map[string]store.AnchorWitness{}
	for _, r := range rs {
		out[r.Actor] = r
	}
	return out
}

func (o *origin) anchorRow(seq int64) store.Anchor {
	o.t.Helper()
	a, err := o.st.AnchorGet(context.Background(), seq)
	require.NoError(o.t, err)
	return a
}

func (o *origin) proofs(outcome ProofOutcome) float64 {
	return testutil.ToFloat64(o.w.m.proofs.WithLabelValues(string(outcome)))
}

func (o *origin) offersMetric(reason string) float64 {
	return testutil.ToFloat64(o.w.m.offers.WithLabelValues(reason))
}

// offerTo returns the last committed Offer addressed to actor.
func (o *origin) offerTo(actor string) *activity.Activity {
	o.t.Helper()
	var found *activity.Activity
	for _, of := range o.offers() {
		if of.To.Contains(actor) {
			found = of
		}
	}
	require.NotNil(o.t, found, "no Offer to %s", actor)
	return found
}

// acceptOpts varies a witness's Accept.
type acceptOpts struct {
	created   time.Time            // proof created; now by default
	key       ed25519.PrivateKey   // signing key; the witness's by default (the method always names it)
	inReplyTo string               // the offered anchor by default
	log       *activity.ReceiptLog // the receipt's log promise; none by default
}

// accept builds witness w's Accept of offer as an Orb or anchord witness sends it: the Offer
// trimmed to the anchor, an AnchorReceipt whose one attachment is w's proof of the offered
// credential.
func accept(t testing.TB, w testDomain, offer *activity.Activity, opt acceptOpts) *activity.Activity {
	t.Helper()
	require.NotNil(t, offer.Object)
	require.NotNil(t, offer.Object.Linkset)
	link := offer.Object.Linkset.Linkset[0]
	content, err := link.Replies[0].Content(vc.MaxDocumentSize)
	require.NoError(t, err)
	cred, err := vc.ParseCredential(content)
	require.NoError(t, err)
	created := opt.created
	if created.IsZero() {
		created = time.Now().UTC()
	}
	key := opt.key
	if key == nil {
		key = w.key
	}
	proof, err := vc.CreateProof(cred, key, vc.ProofOptions{VerificationMethod: w.identity().verificationMethod(), Domain: w.endpoint, Created: created})
	require.NoError(t, err)
	att, err := json.Marshal(vc.NewProofAttachment(proof))
	require.NoError(t, err)
	inReplyTo := opt.inReplyTo
	if inReplyTo == "" {
		inReplyTo = link.Anchor
	}
	end := created.Add(time.Minute)
	return &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams},
		ID:      w.actor + "/activities/" + randomHex(8),
		Type:    activity.TypeAccept,
		Actor:   w.actor,
		To:      activity.Strings{offer.Actor, activity.PublicIRI},
		Object: &activity.Object{Activity: &activity.Activity{
			ID: offer.ID, Type: activity.TypeOffer, Actor: offer.Actor, To: offer.To, Target: offer.Target,
			StartTime: offer.StartTime, EndTime: offer.EndTime, Object: activity.IRIObject(link.Anchor),
		}},
		Result: &activity.Object{AnchorReceipt: &activity.AnchorReceipt{
			Context: activity.Strings{activity.ContextActivityAnchors}, Type: activity.TypeAnchorReceipt,
			InReplyTo: inReplyTo, StartTime: &created, EndTime: &end, Attachment: []json.RawMessage{att}, Log: opt.log,
		}},
	}
}

// deliver hands witness w's Accept of its Offer to the origin.
func (o *origin) deliver(w testDomain, opt acceptOpts) (ProofOutcome, error) {
	o.t.Helper()
	return o.w.HandleAccept(context.Background(), Inbound{Activity: accept(o.t, w, o.offerTo(w.actor), opt), Actor: w.actor})
}

// selectedActors lists the actors recorded as selected for anchor seq.
func (o *origin) selectedActors(seq int64) []string {
	var out []string
	for actor, r := range o.rows(seq) {
		if r.Selected {
			out = append(out, actor)
		}
	}
	slices.Sort(out)
	return out
}
