package witness

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
)

func TestAnchorWithoutWitnessesCompletesAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		o := newOrigin(t, st)
		a := o.anchor(2)

		require.Equal(t, store.AnchorCompleted, a.Status, "the default policy with no witness holds with our own proof")
		wa, err := st.WitnessAnchorGet(context.Background(), a.Seq)
		require.NoError(t, err, "the offered link and credential are recorded even with nobody to offer them to")
		row := o.anchorRow(a.Seq)
		require.Equal(t, store.AnchorCompleted, row.Status)
		require.Equal(t, wa.Hashlink, row.Hashlink, "completion gives the anchor its hashlink")
		require.Equal(t, store.AnchorBackendWitness, row.Backend)
		require.Empty(t, o.offers(), "nothing to offer")
		require.Empty(t, o.rows(a.Seq))
		require.Equal(t, []int64{a.Seq}, o.completedSeqs(), "the observer is woken once")
		require.Equal(t, 1.0, testutil.ToFloat64(o.w.m.completed))
		require.Equal(t, 0.0, o.offersMetric("first"))
		due, err := st.WitnessAnchorsDue(context.Background(), 10)
		require.NoError(t, err)
		require.Empty(t, due)
	})
}

func TestAnchorOffersToTheFewestWitnesses(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		const delay = 7 * time.Minute
		o := newOrigin(t, st, func(c *Config) { c.MaxWitnessDelay = delay })
		b, c := o.witness("b"), o.witness("c")
		o.setPolicy("OutOf(1,system)")

		before := time.Now()
		a := o.anchor(3)
		after := time.Now()

		require.Equal(t, store.AnchorPending, a.Status)
		row := o.anchorRow(a.Seq)
		require.Equal(t, store.AnchorPending, row.Status)
		require.Empty(t, row.Hashlink, "the hashlink is set only at completion")
		require.Empty(t, o.completedSeqs())

		offers := o.offers()
		require.Len(t, offers, 1)
		offer := offers[0]
		var asked string
		for _, to := range offer.To {
			if to != activity.PublicIRI {
				require.Empty(t, asked, "one witness only: %v", offer.To)
				asked = to
			}
		}
		require.Contains(t, []string{b.actor, c.actor}, asked)
		require.True(t, offer.To.Contains(activity.PublicIRI))
		require.Len(t, offer.To, 2)
		require.Equal(t, o.dom.actor, offer.Actor)
		require.Equal(t, activity.AnchorWitnessIRI, offer.Target.IRI)
		require.NotNil(t, offer.StartTime)
		require.NotNil(t, offer.EndTime)
		require.WithinRange(t, offer.StartTime.Local(), before.Add(-time.Second), after.Add(time.Second))
		require.Equal(t, delay, offer.EndTime.Sub(*offer.StartTime), "endTime = now + MaxWitnessDelay")

		// The Offer is in the outbox with a delivery to the selected witness only.
		sent, err := st.ActivityOutboxGet(ctx, offer.ID)
		require.NoError(t, err)
		require.Equal(t, string(activity.TypeOffer), sent.Type)
		deliveries, err := st.ActivityDeliveryListByActivity(ctx, offer.ID)
		require.NoError(t, err)
		require.Len(t, deliveries, 1)
		require.Equal(t, asked, deliveries[0].Recipient)

		// The Offer carries the recorded link, whose credential has no proof yet.
		wa, err := st.WitnessAnchorGet(ctx, a.Seq)
		require.NoError(t, err)
		link := offer.Object.Linkset.Linkset[0]
		require.Equal(t, wa.Hashlink, link.Anchor)
		content, err := link.Replies[0].Content(vc.MaxDocumentSize)
		require.NoError(t, err)
		cred, err := vc.ParseCredential(content)
		require.NoError(t, err)
		require.Equal(t, wa.VCID, cred.ID())
		require.Empty(t, cred.Proofs(), "witnesses sign the credential without the origin's proof")
		require.Equal(t, o.dom.did, cred.Issuer())

		rows := o.rows(a.Seq)
		require.Len(t, rows, 2)
		for _, w := range []testDomain{b, c} {
			r := rows[w.actor]
			require.True(t, r.System, w.actor)
			require.False(t, r.Batch, w.actor)
			require.Nil(t, r.Proof)
			if w.actor == asked {
				require.True(t, r.Selected)
				require.Equal(t, offer.ID, r.OfferID)
				require.NotNil(t, r.OfferEnd)
				require.WithinDuration(t, *offer.EndTime, *r.OfferEnd, time.Millisecond)
			} else {
				require.False(t, r.Selected, "the other witness is a candidate, not asked")
				require.Empty(t, r.OfferID)
			}
		}
		require.Equal(t, 1.0, o.offersMetric("first"))
		require.Equal(t, 0.0, testutil.ToFloat64(o.w.m.completed))
	})
}

func TestAnchorWithTooFewWitnessesWaitsWithoutOffer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		o := newOrigin(t, st)
		b := o.witness("b")
		o.setPolicy("OutOf(2,system)")

		a := o.anchor(1)

		require.Equal(t, store.AnchorPending, a.Status)
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)
		require.Empty(t, o.offers(), "no Offer when the policy cannot be met")
		_, err := st.WitnessAnchorGet(ctx, a.Seq)
		require.NoError(t, err, "recorded for the status monitor")
		rows := o.rows(a.Seq)
		require.Len(t, rows, 1)
		require.False(t, rows[b.actor].Selected)
		require.True(t, rows[b.actor].System)
		require.Equal(t, 0.0, o.offersMetric("first"))
		require.Empty(t, o.completedSeqs())
	})
}

// An anchor that fails inside the batch writer's transaction leaves nothing behind: no
// anchor, no witness record, no Offer.
func TestAnchorRollsBackWithItsTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	o := newOrigin(t, st)
	o.witness("b")
	req, rec := batchRequest(1)
	var seq int64
	errRollback := errorString("batch writer gave up")
	err := st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		a, err := o.w.Anchor(ctx, tx, req, rec)
		require.NoError(t, err)
		seq = a.Seq
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	_, err = st.AnchorGet(ctx, seq)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = st.WitnessAnchorGet(ctx, seq)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Empty(t, o.offers())
	n, err := st.ActivityOutboxCountPublic(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

type errorString string

func (e errorString) Error() string { return string(e) }

// The credential an anchor offers is issued at the anchor's time, the record's: in the did:orb
// profile the batch writer takes that time from the anchor clock, so that no two anchors of the
// domain fall in one whole second.
func TestAnchorCredentialIssuedAtTheAnchorTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	o := newOrigin(t, st)
	req, rec := batchRequest(1)
	rec.Time = time.Date(2026, 11, 26, 12, 0, 7, 250_000_000, time.UTC)
	var a store.Anchor
	require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		var err error
		a, err = o.w.Anchor(ctx, tx, req, rec)
		return err
	}))
	wa, err := st.WitnessAnchorGet(ctx, a.Seq)
	require.NoError(t, err)
	cred, err := vc.ParseCredential(wa.Credential)
	require.NoError(t, err)
	require.True(t, rec.Time.Equal(cred.IssuanceDate()), "issued %s", cred.IssuanceDate())
	require.Equal(t, cred.IssuanceDate().Unix(), a.IssuedAt, "the anchor keeps its credential's second")
}
