package relay

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
)

func TestPublishInSequenceOnce(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	ctx := context.Background()
	w := wallet.New(wallet.Config{})
	x, createX, err := w.Create()
	require.NoError(t, err)
	y, createY, err := w.Create()
	require.NoError(t, err)
	a1 := a.anchorOps(createX, createY)
	updateX, err := w.Update(x)
	require.NoError(t, err)
	a2 := a.anchorOps(updateX)

	creates := a.publishAll()
	require.Len(t, creates, 2)
	require.Empty(t, a.publishAll(), "published once")

	var links []*activity.Link
	var urls []string
	for i, p := range creates {
		act := p.act
		require.Equal(t, activity.TypeCreate, act.Type)
		require.Equal(t, a.id.ActorIRI, act.Actor)
		require.Equal(t, activity.Strings{a.id.FollowersIRI, activity.PublicIRI}, act.To)
		require.NotNil(t, act.Published)
		require.Empty(t, p.exclude)
		// What followers receive parses and checks as Orb's shape.
		parsed, err := activity.Parse(p.body)
		require.NoError(t, err)
		ev := parsed.Object.AnchorEvent
		require.NotNil(t, ev)
		require.NoError(t, ev.VerifyURL())
		link := ev.Object.Link()
		require.NoError(t, link.Validate())
		require.Equal(t, a.id.ActorIRI, link.Author.First())
		require.Contains(t, string(p.body), `"author":[{"href":"`+a.id.ActorIRI+`"}]`)
		require.Contains(t, string(p.body), `"profile":[{"href":"`+activity.ProfileOrbV0+`"}]`)
		links = append(links, link)
		urls = append(urls, ev.URL[0])

		// The linkset is served from /cas/<cid> under the url's link.
		h, err := ev.Hashlink()
		require.NoError(t, err)
		require.Len(t, h.Links, 1)
		served, err := a.net.fetch(ctx, h.Links[0], 1<<20)
		require.NoError(t, err)
		require.NoError(t, h.Verify(served))

		// The anchor is marked published under its event's url, the linkset's hashlink with its
		// link, as Orb knows an anchor; not under the link's anchor (the hash of original).
		seq := []int64{a1.Seq, a2.Seq}[i]
		got, err := a.st.AnchorGet(ctx, seq)
		require.NoError(t, err)
		require.Equal(t, ev.URL[0], got.Hashlink)
		require.NotEqual(t, link.Anchor, h.Anchor())
		require.NotNil(t, got.PublishedAt)

		// The credential is signed by the domain key on its did:web.
		raw, err := link.Replies[0].Content(0)
		require.NoError(t, err)
		cred, err := vc.ParseCredential(raw)
		require.NoError(t, err)
		require.Equal(t, a.id.DID, cred.Issuer())
		doc, err := vc.NewDIDDocument(a.id.DID, a.didKey())
		require.NoError(t, err)
		require.Len(t, cred.Proofs(), 1)
		require.NoError(t, vc.VerifyProof(ctx, cred, cred.Proofs()[0], vc.DocumentResolver(doc)))
	}

	// The first anchor creates both DIDs; the second names the first as x's previous anchor.
	c1, err := links[0].AnchorContent()
	require.NoError(t, err)
	require.ElementsMatch(t, []activity.SuffixAnchor{{Suffix: x.Suffix}, {Suffix: y.Suffix}}, c1.Operations)
	c2, err := links[1].AnchorContent()
	require.NoError(t, err)
	require.Equal(t, []activity.SuffixAnchor{{Suffix: x.Suffix, Previous: urls[0]}}, c2.Operations, "the first anchor's event url, as Orb names a parent")
	require.Equal(t, a.id.ActorIRI, c2.Author)
}

func TestPublisherWaitsForTheAnchorBefore(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	ctx := context.Background()
	w := wallet.New(wallet.Config{})

	// A failed anchor is never published and holds nothing back.
	_, err := a.st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "1.QmFailed", CoreIndexCID: "QmFailed", OpCount: 1, Backend: "local", Status: store.AnchorFailed})
	require.NoError(t, err)
	_, c1, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(c1)

	// An anchor completed but not yet indexed holds back itself and every later one.
	_, c2, err := w.Create()
	require.NoError(t, err)
	_, c3, err := w.Create()
	require.NoError(t, err)
	blocked := a.anchorOpsUnobserved(c2)
	a.anchorOpsUnobserved(c3)
	res, err := a.pub.runOnce(ctx)
	require.NoError(t, err)
	require.NotZero(t, res.Seq, "the first anchor goes")
	res, err = a.pub.runOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Seq)
	require.Equal(t, blocked.Seq, res.Blocked)

	_, err = a.obs.CatchUp(ctx)
	require.NoError(t, err)
	require.Len(t, a.publishAll(), 2)
}

func TestPublishFailureLeavesTheAnchorForLater(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	ctx := context.Background()
	_, c, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	an := a.anchorOps(c)

	// The outbox cannot lay the Create out, before the transaction: nothing is marked.
	prepare := a.pub.prepare
	a.pub.prepare = func(*activity.Activity, []byte) (PostPreparedFunc, error) { return nil, errors.New("cannot lay out") }
	_, err = a.pub.runOnce(ctx)
	require.ErrorContains(t, err, "cannot lay out")
	got, err := a.st.AnchorGet(ctx, an.Seq)
	require.NoError(t, err)
	require.Nil(t, got.PublishedAt)
	a.pub.prepare = prepare

	// The outbox refuses, in the transaction: nothing is marked, nothing is posted; the next
	// turn publishes it.
	a.failPost = errors.New("outbox unavailable")
	_, err = a.pub.runOnce(ctx)
	require.ErrorContains(t, err, "outbox unavailable")
	got, err = a.st.AnchorGet(ctx, an.Seq)
	require.NoError(t, err)
	require.Nil(t, got.PublishedAt)
	require.Empty(t, got.Hashlink)
	require.Empty(t, a.sent())

	a.failPost = nil
	require.Len(t, a.publishAll(), 1)
	got, err = a.st.AnchorGet(ctx, an.Seq)
	require.NoError(t, err)
	require.NotNil(t, got.PublishedAt)
}

func TestPublisherConfig(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	_, err := NewPublisher(Config{}, a.st, a.cas, a.prepare)
	require.ErrorContains(t, err, "ActorIRI missing")
	_, err = NewPublisher(Config{Identity: a.id}, a.st, a.cas, nil)
	require.ErrorContains(t, err, "no outbox")
	bad := a.id
	bad.Key = nil
	_, err = NewPublisher(Config{Identity: bad}, a.st, a.cas, a.prepare)
	require.ErrorContains(t, err, "Ed25519")
}

func TestPublishTakesTheDIDsTheObserverHandedOver(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	w := wallet.New(wallet.Config{})
	x, cx, err := w.Create()
	require.NoError(t, err)
	y, cy, err := w.Create()
	require.NoError(t, err)
	an := a.anchorOps(cx, cy)

	// Handed over (here in an order the batch files do not have), the DIDs are not read back.
	a.pub.Indexed(an.Seq, []string{y.Suffix, x.Suffix})
	c, err := a.publishAll()[0].act.Object.AnchorEvent.Object.Link().AnchorContent()
	require.NoError(t, err)
	require.Equal(t, []activity.SuffixAnchor{{Suffix: y.Suffix}, {Suffix: x.Suffix}}, c.Operations)

	// A list that does not match the anchor's operation count is not trusted.
	_, cz, err := w.Create()
	require.NoError(t, err)
	an = a.anchorOps(cz)
	a.pub.Indexed(an.Seq, []string{x.Suffix, y.Suffix})
	c, err = a.publishAll()[0].act.Object.AnchorEvent.Object.Link().AnchorContent()
	require.NoError(t, err)
	require.Len(t, c.Operations, 1)
	require.NotEqual(t, x.Suffix, c.Operations[0].Suffix)
}

// In the did:orb profile an anchor's credential is issued at the anchor's own time (its
// record's, which the batch writer keeps a whole second apart from the domain's previous
// anchor's), not when it is published: two anchors published within one second still fall in
// two seconds at Orb, which orders a DID's operations by that second.
func TestOrbPublisherIssuesAtTheAnchorTime(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	times := []time.Time{time.Date(2026, 11, 26, 12, 0, 0, 500_000_000, time.UTC), time.Date(2026, 11, 26, 12, 0, 1, 0, time.UTC)}
	next := times
	var err error
	a.anchors, err = anchor.NewWriter(anchor.Config{NowFunc: func() time.Time { now := next[0]; next = next[1:]; return now }}, anchor.NewLocal(a.id.Key))
	require.NoError(t, err)
	orb := sidetree.OrbProfile("a.test")
	a.pub, err = NewPublisher(Config{Identity: a.id, Profile: orb, Limits: a.limits, Logger: anchordtest.Logger(t)}, a.st, a.cas, a.prepare)
	require.NoError(t, err)
	w := wallet.New(wallet.Config{})
	x, createX, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(createX)
	updateX, err := w.Update(x)
	require.NoError(t, err)
	a.anchorOps(updateX)

	creates := a.publishAll()
	require.Len(t, creates, 2)
	for i, p := range creates {
		raw, err := p.act.Object.AnchorEvent.Object.Link().Replies[0].Content(0)
		require.NoError(t, err)
		cred, err := vc.ParseCredential(raw)
		require.NoError(t, err)
		require.True(t, times[i].Equal(cred.IssuanceDate()), "anchor %d issued %s, anchored %s", i, cred.IssuanceDate(), times[i])
	}
}

// DIDs handed over for an anchor that is already published (the publisher read them back
// first) are not kept, and publishing an anchor drops what is held for it and every earlier
// one (another domain's anchors, which this domain indexes but never publishes).
func TestPublisherKeepsNoDIDsOfPublishedAnchors(t *testing.T) {
	t.Parallel()
	a := newDomain(t, newNetwork(), "a", sqlite(t))
	w := wallet.New(wallet.Config{})
	create := func() (string, []byte) {
		d, req, err := w.Create()
		require.NoError(t, err)
		return d.Suffix, req
	}
	held := func() []int64 {
		a.pub.mu.Lock()
		defer a.pub.mu.Unlock()
		return slices.Sorted(maps.Keys(a.pub.indexed))
	}

	x, cx := create()
	first := a.anchorOps(cx)
	require.Len(t, a.publishAll(), 1, "published from its batch files")
	a.pub.Indexed(first.Seq, []string{x}) // the observer's hand-over, late
	require.Empty(t, held(), "an anchor already published")

	y, cy := create()
	second := a.anchorOps(cy)
	a.pub.Indexed(second.Seq, []string{y})
	// What Indexed holds for an anchor of another domain sequenced before ours: the publisher
	// passes over such anchors.
	a.pub.mu.Lock()
	a.pub.indexed[second.Seq-1] = []string{"another domain's"}
	a.pub.mu.Unlock()
	require.Equal(t, []int64{second.Seq - 1, second.Seq}, held())
	require.Len(t, a.publishAll(), 1)
	require.Empty(t, held())
}

// The Create the publisher posts is one the outbox stores without its linkset: the outbox lays
// it out before the publish transaction, against the linkset the publisher puts in CAS in that
// transaction, which re-encoded is byte for byte what the Create embeds, in either profile, and
// the stored form expands to the very body posted. The followers of the moment of the
// transaction get it.
func TestPublishedCreateIsStoredWithoutItsLinkset(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		for _, profile := range []sidetree.Profile{sidetree.DefaultProfile(), sidetree.OrbProfile("a.test")} {
			t.Run(backend+"/orb="+strconv.FormatBool(profile.Orb), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				a := newDomain(t, newNetwork(), "a", storetest.Open(t, storetest.OpenerFor(t, backend)))
				_, prepare := a.federationOutbox()
				follower := "https://f.example/services/anchord"
				posted := map[string][]byte{}
				var err error
				a.pub, err = NewPublisher(Config{Identity: a.id, Profile: profile, Limits: a.limits, Logger: anchordtest.Logger(t)}, a.st, a.cas,
					func(act *activity.Activity, linkset []byte) (PostPreparedFunc, error) {
						post, err := prepare(act, linkset)
						if err != nil {
							return nil, err
						}
						body, err := json.Marshal(act)
						if err != nil {
							return nil, err
						}
						posted[act.ID] = body
						// Accepted after the Create was laid out, the follower is one of the moment
						// of the transaction.
						err = a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{
							Kind: store.RelationshipFollower, Actor: follower, Status: store.RelationshipAccepted,
						})
						return post, err
					})
				require.NoError(t, err)
				w := wallet.New(wallet.Config{})
				var creates [][]byte
				for range 20 {
					_, c, err := w.Create()
					require.NoError(t, err)
					creates = append(creates, c)
				}
				a.anchorOps(creates...)
				a.anchorOps(creates[0])

				var ids []string
				for {
					res, err := a.pub.runOnce(ctx)
					require.NoError(t, err)
					if res.Seq == 0 {
						break
					}
					ids = append(ids, res.ActivityID)
				}
				require.Len(t, ids, 2)
				require.Len(t, posted, 2)
				for i, id := range ids {
					row, err := a.st.ActivityOutboxGet(ctx, id)
					require.NoError(t, err)
					require.True(t, outboxbody.IsCompact(row.Body), "Create %d stored without its linkset", i)
					require.Less(t, len(row.Body), 1024)
					got, err := outboxbody.Expand(ctx, a.st, row.Body)
					require.NoError(t, err)
					require.Equal(t, string(posted[id]), string(got))
					dels, err := a.st.ActivityDeliveryListByActivity(ctx, id)
					require.NoError(t, err)
					require.Len(t, dels, 1)
					require.Equal(t, follower, dels[0].Recipient)
				}
			})
		}
	}
}
