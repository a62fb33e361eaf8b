package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseWitness(t *testing.T, setup setupFunc) {
	t.Run("WitnessAnchorCompletesOnceWithItsHashlink", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		insert := func(anchor string) store.Anchor {
			a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: anchor, CoreIndexCID: "cid-" + anchor, OpCount: 1,
				Backend: store.AnchorBackendWitness, Status: store.AnchorPending, Record: []byte("{}")})
			require.NoError(t, err)
			return a
		}
		a := insert("1.cidA")
		wa := store.WitnessAnchor{Seq: a.Seq, VCID: "https://a.example/vc/1", Hashlink: "hl:uEiA1", Link: []byte(`{"anchor":"hl:uEiA1"}`),
			Credential: []byte(`{"id":"https://a.example/vc/1"}`), OriginProof: []byte(`{"type":"Ed25519Signature2020"}`)}
		require.NoError(t, s.WitnessAnchorInsert(ctx, wa, time.Hour))
		require.ErrorIs(t, s.WitnessAnchorInsert(ctx, wa, time.Hour), store.ErrConflict)

		got, err := s.WitnessAnchorByVCID(ctx, wa.VCID)
		require.NoError(t, err)
		require.Equal(t, wa.Link, got.Link)
		require.Equal(t, wa.Credential, got.Credential)
		require.Equal(t, wa.OriginProof, got.OriginProof)
		require.True(t, got.CheckAt.After(got.CreatedAt))
		_, err = s.WitnessAnchorGet(ctx, a.Seq+100)
		require.ErrorIs(t, err, store.ErrNotFound)

		due, err := s.WitnessAnchorsDue(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, due, "not due before its check time")
		require.NoError(t, s.WitnessAnchorSetCheck(ctx, a.Seq, -time.Second))
		due, err = s.WitnessAnchorsDue(ctx, 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		require.Equal(t, a.Seq, due[0].Seq)

		full, err := s.AnchorGet(ctx, a.Seq)
		require.NoError(t, err)
		require.Empty(t, full.Hashlink, "the hashlink is given only at completion")
		done, err := s.WitnessAnchorComplete(ctx, a.Seq)
		require.NoError(t, err)
		require.Equal(t, store.AnchorCompleted, done.Status)
		require.Equal(t, wa.Hashlink, done.Hashlink)
		_, err = s.WitnessAnchorComplete(ctx, a.Seq)
		require.ErrorIs(t, err, store.ErrNotFound, "completed once")
		due, err = s.WitnessAnchorsDue(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, due, "a completed anchor is no longer checked")

		other := insert("1.cidB")
		_, err = s.WitnessAnchorComplete(ctx, other.Seq)
		require.ErrorIs(t, err, store.ErrNotFound, "only offered anchors complete this way")
	})

	t.Run("AnchorWitnessesKeepTheirFirstProof", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "1.cidW", CoreIndexCID: "cidW", OpCount: 1,
			Backend: store.AnchorBackendWitness, Status: store.AnchorPending, Record: []byte("{}")})
		require.NoError(t, err)
		require.NoError(t, s.WitnessAnchorInsert(ctx, store.WitnessAnchor{Seq: a.Seq, VCID: "vc-w", Hashlink: "hl:w",
			Link: []byte("{}"), Credential: []byte("{}"), OriginProof: []byte("{}")}, time.Minute))

		now := time.Now().UTC().Truncate(time.Millisecond)
		end := now.Add(10 * time.Minute)
		require.NoError(t, s.AnchorWitnessUpsert(ctx, store.AnchorWitness{Seq: a.Seq, Actor: "https://b.example/services/anchord",
			System: true, Selected: true, OfferID: "offer-1", OfferedAt: &now, OfferEnd: &end}))
		require.NoError(t, s.AnchorWitnessUpsert(ctx, store.AnchorWitness{Seq: a.Seq, Actor: "https://c.example/services/anchord", System: true, HasLog: true}))

		added, err := s.AnchorWitnessAddProof(ctx, a.Seq, "https://b.example/services/anchord", []byte(`{"p":1}`))
		require.NoError(t, err)
		require.True(t, added)
		added, err = s.AnchorWitnessAddProof(ctx, a.Seq, "https://b.example/services/anchord", []byte(`{"p":2}`))
		require.NoError(t, err)
		require.False(t, added, "a second proof from the same witness changes nothing")
		_, err = s.AnchorWitnessAddProof(ctx, a.Seq, "https://x.example/services/anchord", []byte(`{}`))
		require.ErrorIs(t, err, store.ErrNotFound, "a proof from no witness of the anchor")

		// Re-offering keeps the proof.
		later := now.Add(time.Minute)
		require.NoError(t, s.AnchorWitnessUpsert(ctx, store.AnchorWitness{Seq: a.Seq, Actor: "https://b.example/services/anchord",
			System: true, Selected: true, OfferID: "offer-2", OfferedAt: &later, OfferEnd: &end}))
		ws, err := s.AnchorWitnessList(ctx, a.Seq)
		require.NoError(t, err)
		require.Len(t, ws, 2)
		b, c := ws[0], ws[1]
		require.Equal(t, "offer-2", b.OfferID)
		require.JSONEq(t, `{"p":1}`, string(b.Proof))
		require.NotNil(t, b.ProofAt)
		require.True(t, b.Selected)
		require.WithinDuration(t, later, *b.OfferedAt, time.Millisecond)
		require.False(t, c.Selected)
		require.True(t, c.HasLog)
		require.Nil(t, c.Proof)
		require.Empty(t, c.OfferID)
		require.Nil(t, c.OfferedAt)
	})

	t.Run("WitnessedOffersAreAnsweredOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		idx := int64(7)
		w := store.Witnessed{OfferID: "https://a.example/activities/1", Offerer: "https://a.example/services/anchord",
			Hashlink: "hl:x", VCID: "https://a.example/vc/1", AcceptID: "https://b.example/activities/2", Proof: []byte(`{}`), LogIndex: &idx}
		require.NoError(t, s.WitnessedInsert(ctx, w))
		require.ErrorIs(t, s.WitnessedInsert(ctx, w), store.ErrConflict)
		got, err := s.WitnessedGet(ctx, w.OfferID)
		require.NoError(t, err)
		require.Equal(t, w.AcceptID, got.AcceptID)
		require.Equal(t, idx, *got.LogIndex)
		_, err = s.WitnessedGet(ctx, "other")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
