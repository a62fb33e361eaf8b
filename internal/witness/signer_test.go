package witness

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
)

// witnessSide is domain B's witness side on its own real store.
type witnessSide struct {
	t   *testing.T
	st  store.Store
	dom testDomain
	s   *Signer
	out *outbox
}

// newWitnessSide makes a Signer for dom that accepted the Invites of invitedBy.
func newWitnessSide(t *testing.T, st store.Store, dom testDomain, appendLog AppendFunc, invitedBy ...string) *witnessSide {
	t.Helper()
	ctx := context.Background()
	for _, actor := range invitedBy {
		require.NoError(t, st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{
			Kind: store.RelationshipWitnessing, Actor: actor, Status: store.RelationshipAccepted, ActivityID: actor + "/activities/invite",
		}))
	}
	isInvitedBy := func(ctx context.Context, actor string) (bool, error) {
		r, err := st.RelationshipGet(ctx, store.RelationshipWitnessing, actor)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil && r.Status == store.RelationshipAccepted, err
	}
	ws := &witnessSide{t: t, st: st, dom: dom, out: &outbox{actor: dom.actor}}
	s, err := NewSigner(Config{Identity: dom.identity(), Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry()},
		st, ws.out.post, isInvitedBy, appendLog)
	require.NoError(t, err)
	ws.s = s
	return ws
}

func (ws *witnessSide) signed(outcome string) float64 {
	return testutil.ToFloat64(ws.s.m.signed.WithLabelValues(outcome))
}

func (ws *witnessSide) accepts() []*activity.Activity { return ws.out.ofType(activity.TypeAccept) }

// requireNothingDone checks that Offer id was neither recorded nor answered.
func (ws *witnessSide) requireNothingDone(id string) {
	ws.t.Helper()
	_, err := ws.st.WitnessedGet(context.Background(), id)
	require.ErrorIs(ws.t, err, store.ErrNotFound, "the Offer is not recorded")
	require.Empty(ws.t, ws.accepts(), "nothing posted")
	n, err := ws.st.ActivityOutboxCountPublic(context.Background())
	require.NoError(ws.t, err)
	require.Zero(ws.t, n, "nothing in the outbox")
}

// copyOffer returns a deep copy of offer, as read from the wire.
func copyOffer(t *testing.T, offer *activity.Activity) *activity.Activity {
	t.Helper()
	body, err := json.Marshal(offer)
	require.NoError(t, err)
	var cp activity.Activity
	require.NoError(t, json.Unmarshal(body, &cp))
	return &cp
}

// offeredTo makes origin A offer an anchor to witness B and returns both and the Offer.
func offeredTo(t *testing.T, st store.Store) (*origin, testDomain, *activity.Activity) {
	t.Helper()
	o := newOrigin(t, st)
	b := o.witness("b")
	o.anchor(2)
	return o, b, o.offerTo(b.actor)
}

func TestSignerRefusesUninvitedOrigins(t *testing.T) {
	t.Parallel()
	o, b, offer := offeredTo(t, storetest.Open(t, storetest.SQLiteOpener(t)))
	ws := newWitnessSide(t, storetest.Open(t, storetest.SQLiteOpener(t)), b, nil, "https://z.example/services/anchord")

	err := ws.s.AuthorizeOffer(context.Background(), Inbound{Activity: offer, Actor: o.dom.actor})
	require.ErrorIs(t, err, ErrForbidden)
	require.Equal(t, 1.0, ws.signed("refused"))
	err = ws.s.HandleOffer(context.Background(), Inbound{Activity: offer, Actor: o.dom.actor})
	require.ErrorIs(t, err, ErrForbidden)
	require.Equal(t, 2.0, ws.signed("refused"))
	ws.requireNothingDone(offer.ID)
}

func TestSignerRefusesMalformedOffers(t *testing.T) {
	t.Parallel()
	o, b, offer := offeredTo(t, storetest.Open(t, storetest.SQLiteOpener(t)))
	var appended int
	ws := newWitnessSide(t, storetest.Open(t, storetest.SQLiteOpener(t)), b, func(context.Context, []byte) (uint64, error) {
		appended++
		return 0, nil
	}, o.dom.actor)
	skew := MaxClockSkewDefault
	now := time.Now().UTC()
	link := offer.Object.Linkset.Linkset[0]

	// A credential naming another anchor than the link's.
	otherAnchor := activity.NewHashlink([]byte("another original"))
	other, err := vc.NewAnchorCredential(vc.AnchorParams{ID: o.dom.endpoint + "/vc/other", Issuer: o.dom.did, Issued: now,
		HRef: otherAnchor, Anchor: activity.NewHashlink([]byte("another core index"))})
	require.NoError(t, err)
	otherJSON, err := json.Marshal(other)
	require.NoError(t, err)
	otherURI, err := activity.NewDataURI(otherJSON, activity.MediaTypeGzipBase64)
	require.NoError(t, err)
	otherOriginal, err := activity.NewDataURI([]byte(`{"linkset":[{"anchor":"`+otherAnchor+`"}]}`), activity.MediaTypeGzipBase64)
	require.NoError(t, err)

	tests := []struct {
		name   string
		reason string // a part of the error's text: the check that refused it
		mutate func(a *activity.Activity)
	}{
		{"WrongTarget", "Offer target", func(a *activity.Activity) { a.Target = activity.IRIObject("https://w3id.org/activityanchors#Other") }},
		{"NoTarget", "Offer target", func(a *activity.Activity) { a.Target = nil }},
		{"NoStartTime", "startTime and endTime", func(a *activity.Activity) { a.StartTime = nil }},
		{"NoEndTime", "startTime and endTime", func(a *activity.Activity) { a.EndTime = nil }},
		{"Expired", "expired", func(a *activity.Activity) {
			start, end := now.Add(-time.Hour), now.Add(-skew-time.Second)
			a.StartTime, a.EndTime = &start, &end
		}},
		{"StartsInTheFuture", "starts in the future", func(a *activity.Activity) {
			start, end := now.Add(skew+time.Minute), now.Add(time.Hour)
			a.StartTime, a.EndTime = &start, &end
		}},
		{"ObjectIsAnIRI", "linkset of one anchor link", func(a *activity.Activity) { a.Object = activity.IRIObject(link.Anchor) }},
		{"TwoLinks", "linkset of one anchor link", func(a *activity.Activity) {
			ls := a.Object.Linkset
			ls.Linkset = append(ls.Linkset, ls.Linkset[0])
		}},
		{"NoLinks", "linkset of one anchor link", func(a *activity.Activity) { a.Object.Linkset.Linkset = nil }},
		{"RepliesNotJSONLD", "replies must hold the credential", func(a *activity.Activity) { a.Object.Linkset.Linkset[0].Replies[0].Type = "application/json" }},
		{"NoReplies", "replies must hold the credential", func(a *activity.Activity) { a.Object.Linkset.Linkset[0].Replies = nil }},
		{"CredentialNamesAnotherAnchor", "is not the hashlink of the original content", func(a *activity.Activity) {
			a.Object.Linkset.Linkset[0].Replies[0].HRef = otherURI
		}},
		{"LinkAnchorIsNotTheHashOfItsOriginal", "credential names anchor", func(a *activity.Activity) {
			a.Object.Linkset.Linkset[0].Anchor = otherAnchor
		}},
		{"OriginalReplaced", "is not the hashlink of the original content", func(a *activity.Activity) {
			a.Object.Linkset.Linkset[0].Original[0].HRef = otherOriginal
		}},
		{"RepliesNotACredential", "parse credential", func(a *activity.Activity) {
			uri, err := activity.NewDataURI([]byte(`{"hello":"world"}`), activity.MediaTypeGzipBase64)
			require.NoError(t, err)
			a.Object.Linkset.Linkset[0].Replies[0].HRef = uri
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := copyOffer(t, offer)
			bad.ID = offer.ID + "-" + tt.name
			tt.mutate(bad)
			err := ws.s.HandleOffer(context.Background(), Inbound{Activity: bad, Actor: o.dom.actor})
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.reason)
			ws.requireNothingDone(bad.ID)
			require.Equal(t, float64(i+1), ws.signed("refused"))
			require.Zero(t, appended, "nothing logged for a refused Offer")
		})
	}
	require.Zero(t, ws.signed("signed"))

	// The untouched Offer is answered: the refusals came from the changes.
	require.NoError(t, ws.s.HandleOffer(context.Background(), Inbound{Activity: copyOffer(t, offer), Actor: o.dom.actor}))
	require.Len(t, ws.accepts(), 1)
}

func TestSignerAnswersAnOfferOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		o, b, offer := offeredTo(t, storetest.Open(t, storetest.SQLiteOpener(t)))
		ws := newWitnessSide(t, st, b, nil, o.dom.actor)
		in := Inbound{Activity: copyOffer(t, offer), Actor: o.dom.actor}

		require.NoError(t, ws.s.AuthorizeOffer(ctx, in))
		before := time.Now().UTC()
		require.NoError(t, ws.s.HandleOffer(ctx, in))
		accepts := ws.accepts()
		require.Len(t, accepts, 1)
		acc := accepts[0]
		link := offer.Object.Linkset.Linkset[0]

		require.Equal(t, b.actor, acc.Actor)
		require.Equal(t, activity.Strings{o.dom.actor, activity.PublicIRI}, acc.To)
		trimmed := acc.Object.Activity
		require.NotNil(t, trimmed)
		require.Equal(t, offer.ID, trimmed.ID)
		require.Equal(t, activity.TypeOffer, trimmed.Type)
		require.Equal(t, link.Anchor, trimmed.Object.IRI, "the Offer trimmed to the anchor hashlink")
		receipt := acc.Result.AnchorReceipt
		require.NotNil(t, receipt)
		require.Equal(t, activity.TypeAnchorReceipt, receipt.Type)
		require.Equal(t, link.Anchor, receipt.InReplyTo)
		require.Equal(t, MaxWitnessDelayDefault, receipt.EndTime.Sub(*receipt.StartTime))
		require.Len(t, receipt.Attachment, 1)

		proof, err := vc.ParseProofAttachment(receipt.Attachment[0])
		require.NoError(t, err)
		content, err := link.Replies[0].Content(vc.MaxDocumentSize)
		require.NoError(t, err)
		cred, err := vc.ParseCredential(content)
		require.NoError(t, err)
		require.NoError(t, vc.VerifyProof(ctx, cred, proof, b.resolver(t)), "the proof verifies on the offered credential")
		require.Equal(t, b.endpoint, proof.Domain)
		created, err := proof.CreatedTime()
		require.NoError(t, err)
		require.WithinRange(t, created, before.Add(-time.Second), time.Now().Add(time.Second))

		rec, err := st.WitnessedGet(ctx, offer.ID)
		require.NoError(t, err)
		require.Equal(t, o.dom.actor, rec.Offerer)
		require.Equal(t, link.Anchor, rec.Hashlink)
		require.Equal(t, cred.ID(), rec.VCID)
		require.Equal(t, acc.ID, rec.AcceptID)
		require.JSONEq(t, string(receipt.Attachment[0]), string(rec.Proof))
		require.Nil(t, rec.LogIndex)
		sent, err := st.ActivityOutboxGet(ctx, acc.ID)
		require.NoError(t, err)
		require.True(t, sent.Public)
		deliveries, err := st.ActivityDeliveryListByActivity(ctx, acc.ID)
		require.NoError(t, err)
		require.Len(t, deliveries, 1)
		require.Equal(t, o.dom.actor, deliveries[0].Recipient)
		require.Equal(t, 1.0, ws.signed("signed"))

		// The same Offer again (a redelivery) is not answered twice.
		require.NoError(t, ws.s.HandleOffer(ctx, Inbound{Activity: copyOffer(t, offer), Actor: o.dom.actor}))
		require.Len(t, ws.accepts(), 1)
		require.Equal(t, 1.0, ws.signed("duplicate"))
		require.Equal(t, 1.0, ws.signed("signed"))

		// And the origin takes the Accept as it came off the wire: the anchor completes.
		got, err := o.w.HandleAccept(ctx, Inbound{Activity: acc, Actor: b.actor})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, got)
		require.Len(t, o.completedSeqs(), 1)
	})
}

func TestSignerLogsBeforeItSigns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o, b, offer := offeredTo(t, storetest.Open(t, storetest.SQLiteOpener(t)))
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	errLog := errors.New("log unavailable")
	var (
		mu      sync.Mutex
		entries [][]byte
		fail    = true
		ws      *witnessSide
	)
	ws = newWitnessSide(t, st, b, func(ctx context.Context, entry []byte) (uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		require.Empty(t, ws.accepts(), "logged before the Accept is posted")
		_, err := st.WitnessedGet(ctx, offer.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "logged before the Offer is recorded")
		entries = append(entries, entry)
		if fail {
			return 0, errLog
		}
		return uint64(40 + len(entries)), nil
	}, o.dom.actor)

	err := ws.s.HandleOffer(ctx, Inbound{Activity: copyOffer(t, offer), Actor: o.dom.actor})
	require.ErrorIs(t, err, errLog)
	require.NotErrorIs(t, err, ErrInvalid, "a log outage is retried, not parked")
	ws.requireNothingDone(offer.ID)
	require.Zero(t, ws.signed("signed"))

	mu.Lock()
	fail = false
	mu.Unlock()
	require.NoError(t, ws.s.HandleOffer(ctx, Inbound{Activity: copyOffer(t, offer), Actor: o.dom.actor}))
	require.Len(t, ws.accepts(), 1)
	rec, err := st.WitnessedGet(ctx, offer.ID)
	require.NoError(t, err)
	require.NotNil(t, rec.LogIndex)
	require.Equal(t, int64(42), *rec.LogIndex)

	// The entry is the offered credential, without proofs.
	link := offer.Object.Linkset.Linkset[0]
	content, err := link.Replies[0].Content(vc.MaxDocumentSize)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	logged, err := vc.ParseCredential(entries[1])
	require.NoError(t, err)
	offered, err := vc.ParseCredential(content)
	require.NoError(t, err)
	require.Equal(t, offered.ID(), logged.ID())
	require.Empty(t, logged.Proofs())
	wantJSON, err := json.Marshal(offered.WithoutProofs())
	require.NoError(t, err)
	require.JSONEq(t, string(wantJSON), string(entries[1]))
	require.Equal(t, 1.0, ws.signed("signed"))
}
