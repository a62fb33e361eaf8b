package relay

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
)

// sameState checks that two domains resolve a DID alike.
func sameState(t *testing.T, want, got *sidetree.State) {
	t.Helper()
	require.NotNil(t, want)
	require.NotNil(t, got)
	require.Equal(t, want.Document, got.Document)
	require.Equal(t, want.UpdateCommitment, got.UpdateCommitment)
	require.Equal(t, want.RecoveryCommitment, got.RecoveryCommitment)
	require.True(t, got.Published)
}

func TestFollowerObservesAnchors(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	ctx := context.Background()
	start := time.Now().Unix()
	w := wallet.New(wallet.Config{})
	x, createX, err := w.Create(wallet.AddServices(wallet.Service{ID: "s", Type: "T", Endpoint: "https://x.example"}))
	require.NoError(t, err)
	y, createY, err := w.Create()
	require.NoError(t, err)
	a1 := a.anchorOps(createX, createY)
	updateX, err := w.Update(x, wallet.AddServices(wallet.Service{ID: "s2", Type: "T", Endpoint: "https://x2.example"}))
	require.NoError(t, err)
	a.anchorOps(updateX)
	creates := a.publishAll()
	require.Len(t, creates, 2)
	published := time.Now().Unix()

	for _, c := range creates {
		require.NoError(t, b.deliver(a, c, true))
	}
	for _, s := range []string{x.Suffix, y.Suffix} {
		got := b.state(s)
		sameState(t, a.state(s), got)
		require.Equal(t, a.id.ActorIRI, got.Origin(), "resolution names the origin domain")
	}
	require.Len(t, b.state(x.Suffix).Document.Services, 2)

	// The anchors are recorded with their origin and hashlink, and the files copied here.
	a1Row, err := a.st.AnchorGet(ctx, a1.Seq)
	require.NoError(t, err)
	have, err := b.st.AnchorsByHashlink(ctx, []string{a1Row.Hashlink})
	require.NoError(t, err)
	bRow, err := b.st.AnchorGet(ctx, have[a1Row.Hashlink])
	require.NoError(t, err)
	require.Equal(t, a.id.ActorIRI, bRow.Origin)
	require.Equal(t, store.AnchorBackendFederation, bRow.Backend)
	require.Equal(t, a1.CoreIndexCID, bRow.CoreIndexCID)
	require.Equal(t, a1.AnchorString, bRow.AnchorString)
	// The second its credential was issued, which A's publisher wrote between the two.
	require.GreaterOrEqual(t, bRow.IssuedAt, start)
	require.LessOrEqual(t, bRow.IssuedAt, published)
	_, err = b.st.CASGet(ctx, a1.CoreIndexCID)
	require.NoError(t, err)

	// Each live Create is announced once to B's followers, never back to A.
	announces := b.sent()
	require.Len(t, announces, 2)
	for i, p := range announces {
		require.Equal(t, activity.TypeAnnounce, p.act.Type)
		require.Equal(t, []string{a.id.ActorIRI}, p.exclude)
		require.Equal(t, activity.Strings{b.id.FollowersIRI, activity.PublicIRI}, p.act.To)
		parsed, err := activity.Parse(p.body)
		require.NoError(t, err)
		items := parsed.Object.Collection.Members()
		require.Len(t, items, 1)
		require.NoError(t, items[0].AnchorEvent.VerifyURL(), "the event travels as received")
		require.Equal(t, creates[i].act.Object.AnchorEvent.URL, items[0].AnchorEvent.URL)
	}
	require.Equal(t, 2.0, testutil.ToFloat64(b.recv.m.anchors.WithLabelValues(outcomeApplied)))

	// B's own anchors build on A's: B publishes an update of x naming A's anchor.
	updateX2, err := w.Update(x)
	require.NoError(t, err)
	b.anchorOps(updateX2)
	bCreates := b.publishAll()
	require.Len(t, bCreates, 1)
	c, err := bCreates[0].act.Object.AnchorEvent.Object.Link().AnchorContent()
	require.NoError(t, err)
	lastA, err := a.st.AnchorGet(ctx, a1.Seq+1)
	require.NoError(t, err)
	require.Equal(t, []activity.SuffixAnchor{{Suffix: x.Suffix, Previous: lastA.Hashlink}}, c.Operations)
}

func TestDuplicateDeliveryIsANoOp(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	a.anchorOps(create)
	c := a.publishAll()[0]
	require.NoError(t, b.deliver(a, c, true))
	require.NoError(t, b.deliver(a, c, true), "a redelivery")
	require.NoError(t, b.deliver(a, c, false), "the activity sync's copy")
	rows, err := b.st.DIDOperationList(context.Background(), x.Suffix)
	require.NoError(t, err)
	require.Len(t, rows, 1, "indexed once")
	require.Len(t, b.sent(), 1, "announced once")
	require.Equal(t, 2.0, testutil.ToFloat64(b.recv.m.anchors.WithLabelValues(outcomeDuplicate)))

	// Our own Create, read back from a follower's inbox, is ours already.
	require.NoError(t, a.deliver(a, c, false))
}

func TestSyncedCreateIsNotAnnounced(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	a.anchorOps(create)
	require.NoError(t, b.deliver(a, a.publishAll()[0], false))
	require.NotNil(t, b.state(x.Suffix))
	require.Empty(t, b.sent())
}

func TestAnchorFromADomainNotFollowedIsRefused(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	a.anchorOps(create)
	c := a.publishAll()[0]
	require.ErrorIs(t, b.deliver(a, c, true), ErrNotFollowed)
	require.Nil(t, b.state(x.Suffix))
	list, err := b.st.AnchorList(context.Background(), store.AnchorListParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, list, "nothing recorded")
	require.Equal(t, 1.0, testutil.ToFloat64(b.recv.m.anchors.WithLabelValues(outcomeRefused)))
}

func TestParentsFirst(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	w := wallet.New(wallet.Config{})
	x, create, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(create)
	u1, err := w.Update(x, wallet.AddServices(wallet.Service{ID: "one", Type: "T", Endpoint: "https://1.example"}))
	require.NoError(t, err)
	a.anchorOps(u1)
	u2, err := w.Update(x, wallet.AddServices(wallet.Service{ID: "two", Type: "T", Endpoint: "https://2.example"}))
	require.NoError(t, err)
	a.anchorOps(u2)
	creates := a.publishAll()
	require.Len(t, creates, 3)

	// Newest first: each waits for its parent, and nothing of x is indexed.
	require.NoError(t, b.deliver(a, creates[2], true))
	require.NoError(t, b.deliver(a, creates[1], true))
	require.Nil(t, b.state(x.Suffix))
	count, err := b.st.WaitingAnchorCount(context.Background(), a.id.ActorIRI)
	require.NoError(t, err)
	require.Equal(t, 2, count)
	require.Equal(t, SweepResult{Waiting: 2}, b.sweep(), "no parent has arrived")

	// The root arrives: the sweep applies the chain, parents first.
	require.NoError(t, b.deliver(a, creates[0], true))
	res := b.sweep()
	require.Equal(t, 2, res.Applied)
	require.Zero(t, res.Waiting)
	sameState(t, a.state(x.Suffix), b.state(x.Suffix))
	require.Len(t, b.state(x.Suffix).Document.Services, 2)
	require.Len(t, b.sent(), 3, "waiting live Creates are announced once applied")
}

func TestPreviousAnchorRule(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b, c := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t)), newDomain(t, n, "c", sqlite(t))
	b.follow(a)
	b.follow(c)
	c.follow(a)
	w := wallet.New(wallet.Config{})
	x, create, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(create)
	a1 := a.publishAll()[0]
	require.NoError(t, c.deliver(a, a1, true))
	require.NoError(t, b.deliver(a, a1, true))

	// Two updates of x with the same key: one anchored at C, one at A, both after A's create.
	atC, atA := *x, *x
	updateC, err := w.Update(&atC, wallet.AddServices(wallet.Service{ID: "c", Type: "T", Endpoint: "https://c.example"}))
	require.NoError(t, err)
	updateA, err := w.Update(&atA, wallet.AddServices(wallet.Service{ID: "a", Type: "T", Endpoint: "https://a.example"}))
	require.NoError(t, err)
	c.anchorOps(updateC)
	c1 := c.publishAll()[0]
	a.anchorOps(updateA)
	a2 := a.publishAll()[0]

	// B takes C's first: A's update names A's create as previous, but x's latest anchor at B
	// is now C's, so A's update is not applied; the anchor itself is recorded.
	require.NoError(t, b.deliver(c, c1, true))
	require.NoError(t, b.deliver(a, a2, true))
	require.Equal(t, 1.0, testutil.ToFloat64(b.recv.m.stale))
	got := b.state(x.Suffix)
	require.Equal(t, atC.UpdateKey.Commitment(), got.UpdateCommitment)
	require.Equal(t, "c", got.Document.Services[0].ID)
	require.Equal(t, c.id.ActorIRI, got.Origin())
	rows, err := b.st.DIDOperationList(context.Background(), x.Suffix)
	require.NoError(t, err)
	require.Len(t, rows, 2, "create and C's update")
	hl := a2.act.Object.AnchorEvent.URL[0]
	have, err := b.st.AnchorsByHashlink(context.Background(), []string{hl})
	require.NoError(t, err)
	require.Contains(t, have, hl)

	// A create of a DID that exists here is not applied either.
	require.NoError(t, b.deliver(c, a1ReplayedBy(t, c, create), true))
	rows, err = b.st.DIDOperationList(context.Background(), x.Suffix)
	require.NoError(t, err)
	require.Len(t, rows, 2)
}

// a1ReplayedBy anchors the same create again at d and returns its Create.
func a1ReplayedBy(t *testing.T, d *domain, create []byte) posted {
	t.Helper()
	d.anchorOps(create)
	out := d.publishAll()
	require.Len(t, out, 1)
	return out[0]
}

func TestAnnouncedAnchorsReachFollowersOfFollowers(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b, d := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t)), newDomain(t, n, "d", sqlite(t))
	b.follow(a)
	d.follow(b)
	w := wallet.New(wallet.Config{})
	x, createX, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(createX)
	require.NoError(t, b.deliver(a, a.publishAll()[0], true))
	announce := b.sent()[0]
	require.NoError(t, d.deliver(b, announce, true))
	sameState(t, a.state(x.Suffix), d.state(x.Suffix))
	require.Equal(t, a.id.ActorIRI, d.state(x.Suffix).Origin())
	require.Empty(t, d.sent(), "an announced anchor is not forwarded again")
	require.Positive(t, testutil.ToFloat64(d.recv.m.fetchedBytes.WithLabelValues(sourceOrigin)))

	// A is down: D reads the files from B, which announced them (A's key is still cached).
	y, createY, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(createY)
	require.NoError(t, b.deliver(a, a.publishAll()[0], true))
	n.setDown(a, true)
	require.NoError(t, d.deliver(b, b.sent()[1], true))
	sameState(t, a.state(y.Suffix), d.state(y.Suffix))
	require.Positive(t, testutil.ToFloat64(d.recv.m.fetchedBytes.WithLabelValues(sourceSender)))

	// With neither up the anchor cannot be read: a transient error, retried by the inbox.
	z, createZ, err := w.Create()
	require.NoError(t, err)
	n.setDown(a, false)
	a.anchorOps(createZ)
	require.NoError(t, b.deliver(a, a.publishAll()[0], true))
	n.setDown(a, true)
	n.setDown(b, true)
	err = d.deliver(b, b.sent()[2], true)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrInvalid)
	require.Nil(t, d.state(z.Suffix))
	n.setDown(b, false)
	require.NoError(t, d.deliver(b, b.sent()[2], true))
	require.NotNil(t, d.state(z.Suffix))
}

func TestAnnounceOfAReferenceFetchesTheLinkset(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	a.anchorOps(create)
	c := a.publishAll()[0]
	ref, err := json.Marshal(activity.NewAnchorEvent(c.act.Object.AnchorEvent.URL[0], nil))
	require.NoError(t, err)
	announce := &activity.Activity{
		ID: a.id.ActorIRI + "/activities/ann", Type: activity.TypeAnnounce, Actor: a.id.ActorIRI,
		Object: &activity.Object{Collection: &activity.Collection{Type: activity.TypeCollection, TotalItems: 1, Items: []*activity.Object{{Document: ref}}}},
	}
	body, err := json.Marshal(announce)
	require.NoError(t, err)
	require.NoError(t, b.deliver(a, posted{act: announce, body: body}, true))
	require.NotNil(t, b.state(x.Suffix))
}

// reseal rewrites a Create's first link with mutate and, if seal, recomputes the event's url
// so that only the link's own checks can catch the change.
func reseal(t *testing.T, p posted, seal bool, mutate func(link map[string]any)) posted {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(p.body, &doc))
	ev := doc["object"].(map[string]any)
	ls := ev["object"].(map[string]any)
	mutate(ls["linkset"].([]any)[0].(map[string]any))
	if seal {
		raw, err := json.Marshal(ls)
		require.NoError(t, err)
		var parsed activity.Linkset
		require.NoError(t, json.Unmarshal(raw, &parsed))
		lsJSON, err := parsed.Canonical()
		require.NoError(t, err)
		ev["url"] = activity.NewHashlink(lsJSON)
		ev["object"] = json.RawMessage(lsJSON)
	}
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	act, err := activity.Parse(body)
	require.NoError(t, err)
	return posted{act: act, body: body}
}

func TestTamperedAnchorsAreInvalid(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, c := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "c", sqlite(t))
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	a.anchorOps(create)
	good := a.publishAll()[0]

	for i, tc := range []struct {
		name   string
		from   *domain
		create posted
	}{
		{name: "linkset changed under its url", from: a, create: reseal(t, good, false, func(l map[string]any) {
			l["profile"] = []any{map[string]any{"href": "https://example.com/other"}}
		})},
		{name: "anchor is not the hash of original", from: a, create: reseal(t, good, true, func(l map[string]any) {
			l["anchor"] = activity.NewHashlink([]byte("something else"))
		})},
		{name: "author is not the sender", from: c, create: good},
		{name: "author claims another domain", from: c, create: reseal(t, good, true, func(l map[string]any) {
			l["author"] = []any{map[string]any{"href": c.id.ActorIRI}}
		})},
		{name: "credential missing", from: a, create: reseal(t, good, true, func(l map[string]any) { delete(l, "replies") })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newDomain(t, n, fmt.Sprintf("b%d", i), sqlite(t))
			b.follow(a)
			b.follow(c)
			err := b.deliver(tc.from, tc.create, true)
			require.ErrorIs(t, err, ErrInvalid)
			require.Nil(t, b.state(x.Suffix))
			require.Empty(t, b.sent())
			require.Equal(t, 1.0, testutil.ToFloat64(b.recv.m.anchors.WithLabelValues(outcomeInvalid)))
		})
	}
}

func TestCredentialByAKeyTheOriginDoesNotPublish(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	a.anchorOps(create)
	c := a.publishAll()[0]
	a.mu.Lock()
	a.wrongKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey)
	a.mu.Unlock()
	require.ErrorIs(t, b.deliver(a, c, true), ErrInvalid)
	require.Nil(t, b.state(x.Suffix))

	// The origin's did:web host down: retried, not refused (the cached document lacks the key,
	// so it is read again).
	n.setDown(a, true)
	err = b.deliver(a, c, true)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrInvalid)
}

func TestWaitingAnchorsAreBoundedPerOrigin(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.recv.cfg.MaxWaitingPerOrigin = 1
	b.follow(a)
	w := wallet.New(wallet.Config{})
	x, cx, err := w.Create()
	require.NoError(t, err)
	y, cy, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(cx, cy)
	ux, err := w.Update(x)
	require.NoError(t, err)
	a.anchorOps(ux)
	uy, err := w.Update(y)
	require.NoError(t, err)
	a.anchorOps(uy)
	creates := a.publishAll()
	require.NoError(t, b.deliver(a, creates[1], true))
	err = b.deliver(a, creates[2], true)
	require.ErrorContains(t, err, "already wait")
	require.NotErrorIs(t, err, ErrInvalid, "retried later, when fewer wait")
}
