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

	t.Run("LogPromisesAreSettledOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		b, c, d := "https://b.example/services/anchord", "https://c.example/services/anchord", "https://d.example/services/anchord"
		var seqs []int64
		for i, name := range []string{"1.cidP1", "1.cidP2"} {
			a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: name, CoreIndexCID: name, OpCount: 1,
				Backend: store.AnchorBackendWitness, Status: store.AnchorPending, Record: []byte("{}")})
			require.NoError(t, err)
			require.NoError(t, s.WitnessAnchorInsert(ctx, store.WitnessAnchor{Seq: a.Seq, VCID: name, Hashlink: "hl:" + name,
				Link: []byte("{}"), Credential: []byte("{}"), OriginProof: []byte("{}")}, time.Minute), i)
			for _, actor := range []string{b, c, d} {
				require.NoError(t, s.AnchorWitnessUpsert(ctx, store.AnchorWitness{Seq: a.Seq, Actor: actor, System: true, HasLog: true, Selected: true}))
			}
			seqs = append(seqs, a.Seq)
		}
		deadline := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
		promise := func(seq int64, actor string, index int64) {
			t.Helper()
			added, err := s.AnchorWitnessAddProof(ctx, seq, actor, []byte(`{}`))
			require.NoError(t, err)
			require.True(t, added)
			require.NoError(t, s.AnchorWitnessPromise(ctx, seq, actor, store.LogPromise{Origin: actor[8:17] + "/log", Index: index, Deadline: deadline}))
		}
		require.ErrorIs(t, s.AnchorWitnessPromise(ctx, seqs[0], b, store.LogPromise{Origin: "b.example/log", Deadline: deadline}),
			store.ErrNotFound, "a promise comes with a proof")
		promise(seqs[0], b, 7)
		time.Sleep(2 * time.Millisecond) // proof times differ: the list is oldest first
		promise(seqs[1], b, 8)
		time.Sleep(2 * time.Millisecond)
		promise(seqs[0], c, 0)
		_, err := s.AnchorWitnessAddProof(ctx, seqs[1], d, []byte(`{}`)) // a proof without a promise (an Orb witness)
		require.NoError(t, err)

		open, err := s.LogPromisesUnsettled(ctx, 10)
		require.NoError(t, err)
		require.Len(t, open, 3)
		require.Equal(t, [][2]any{{seqs[0], b}, {seqs[1], b}, {seqs[0], c}},
			[][2]any{{open[0].Seq, open[0].Actor}, {open[1].Seq, open[1].Actor}, {open[2].Seq, open[2].Actor}})
		require.Equal(t, &store.LogPromise{Origin: "b.example/log", Index: 7, Deadline: deadline}, withUTC(open[0].Promise))
		require.Nil(t, open[0].PromiseVerifiedAt)
		require.Nil(t, open[0].PromiseBrokenAt)
		require.True(t, open[0].ProofCounts())
		limited, err := s.LogPromisesUnsettled(ctx, 1)
		require.NoError(t, err)
		require.Len(t, limited, 1)

		ok, err := s.LogPromiseSettle(ctx, seqs[0], b, false)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.LogPromiseSettle(ctx, seqs[0], b, true)
		require.NoError(t, err)
		require.False(t, ok, "a verified promise is not broken afterwards")
		ok, err = s.LogPromiseSettle(ctx, seqs[1], b, true)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.LogPromiseSettle(ctx, seqs[1], b, false)
		require.NoError(t, err)
		require.False(t, ok, "a broken promise stays broken")
		ok, err = s.LogPromiseSettle(ctx, seqs[1], d, true)
		require.NoError(t, err)
		require.False(t, ok, "a proof without a promise is never settled")

		open, err = s.LogPromisesUnsettled(ctx, 10)
		require.NoError(t, err)
		require.Len(t, open, 1)
		require.Equal(t, c, open[0].Actor)
		require.Equal(t, int64(0), open[0].Promise.Index, "index 0 is a promise like any other")

		ws, err := s.AnchorWitnessList(ctx, seqs[1])
		require.NoError(t, err)
		require.Len(t, ws, 3)
		require.Equal(t, b, ws[0].Actor)
		require.NotNil(t, ws[0].PromiseBrokenAt)
		require.False(t, ws[0].ProofCounts(), "a broken promise's proof does not count")
		require.Nil(t, ws[2].Promise)
		require.True(t, ws[2].ProofCounts())
		ws, err = s.AnchorWitnessList(ctx, seqs[0])
		require.NoError(t, err)
		require.NotNil(t, ws[0].PromiseVerifiedAt)
		require.True(t, ws[0].ProofCounts())

		broken, err := s.LogPromisesBroken(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{b: 1}, broken)
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

func withUTC(p *store.LogPromise) *store.LogPromise {
	if p == nil {
		return nil
	}
	q := *p
	q.Deadline = q.Deadline.UTC()
	return &q
}
