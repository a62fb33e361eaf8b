package witness

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
)

// splitSelected returns the witnesses of anchor seq that were asked and those that were not.
func splitSelected(o *origin, seq int64, ws ...testDomain) (asked, unasked []testDomain) {
	sel := o.selectedActors(seq)
	for _, w := range ws {
		if slices.Contains(sel, w.actor) {
			asked = append(asked, w)
		} else {
			unasked = append(unasked, w)
		}
	}
	return asked, unasked
}

func TestProofsCompleteTheAnchorOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		o := newOrigin(t, st)
		b, c, d := o.witness("b"), o.witness("c"), o.witness("d")
		o.setPolicy("OutOf(2,system)")
		a := o.anchor(2)
		asked, unasked := splitSelected(o, a.Seq, b, c, d)
		require.Len(t, asked, 2)
		require.Len(t, unasked, 1)
		first, second, other := asked[0], asked[1], unasked[0]

		// A proof from the witness we did not ask (it may read the public Offer) is refused:
		// the Offer was not addressed to it. It is neither counted nor kept.
		require.Len(t, o.offers(), 1)
		offer := o.offers()[0]
		got, err := o.w.HandleAccept(ctx, Inbound{Activity: accept(t, other, offerAs(offer, other), acceptOpts{}), Actor: other.actor})
		require.ErrorIs(t, err, ErrForbidden)
		require.Empty(t, got)
		require.Nil(t, o.rows(a.Seq)[other.actor].Proof)
		require.False(t, o.rows(a.Seq)[other.actor].Selected)

		acc := accept(t, first, o.offerTo(first.actor), acceptOpts{})
		got, err = o.w.HandleAccept(ctx, Inbound{Activity: acc, Actor: first.actor})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, got)
		require.NotNil(t, o.rows(a.Seq)[first.actor].Proof)
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status, "one of two proofs")

		got, err = o.w.HandleAccept(ctx, Inbound{Activity: acc, Actor: first.actor})
		require.NoError(t, err)
		require.Equal(t, ProofDuplicate, got, "the same Accept again")
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status, "a duplicate is not a second witness")

		got, err = o.deliver(second, acceptOpts{})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, got)
		row := o.anchorRow(a.Seq)
		require.Equal(t, store.AnchorCompleted, row.Status)
		wa, err := st.WitnessAnchorGet(ctx, a.Seq)
		require.NoError(t, err)
		require.Equal(t, wa.Hashlink, row.Hashlink)

		got, err = o.w.HandleAccept(ctx, Inbound{Activity: acc, Actor: first.actor})
		require.NoError(t, err)
		require.Equal(t, ProofLate, got, "an Accept for an anchor no longer pending")

		require.Equal(t, []int64{a.Seq}, o.completedSeqs())
		require.Equal(t, 1.0, testutil.ToFloat64(o.w.m.completed))
		require.Equal(t, 2.0, o.proofs(ProofAdded))
		require.Equal(t, 1.0, o.proofs(ProofDuplicate))
		require.Equal(t, 1.0, o.proofs(ProofLate))
		require.Zero(t, o.proofs(ProofUnselected))
		require.Equal(t, uint64(1), anchordtest.SampleCount(t, o.w.m.witnessTime), "the completed anchor's time to witness, once")
	})
}

// offerAs returns offer as if it had been addressed to w too: what an unasked domain that saw
// the public Offer would answer.
func offerAs(offer *activity.Activity, w testDomain) *activity.Activity {
	cp := *offer
	cp.To = append(slices.Clone(offer.To), w.actor)
	return &cp
}

func TestAcceptRefused(t *testing.T) {
	t.Parallel()
	const skew = 5 * time.Second
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	o := newOrigin(t, st, func(c *Config) { c.MaxClockSkew = skew; c.MaxWitnessDelay = time.Minute })
	b, c := o.witness("b"), o.witness("c")
	o.setPolicy("OutOf(1,system)")
	a := o.anchor(1)
	asked, unasked := splitSelected(o, a.Seq, b, c)
	require.Len(t, asked, 1)
	w, other := asked[0], unasked[0]
	offer := o.offerTo(w.actor)
	wa, err := st.WitnessAnchorGet(context.Background(), a.Seq)
	require.NoError(t, err)
	cred, err := vc.ParseCredential(wa.Credential)
	require.NoError(t, err)
	issued, end := cred.IssuanceDate(), *offer.EndTime
	_, rogue, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)

	tests := []struct {
		name    string
		actor   testDomain
		build   func() *activity.Activity
		wantErr error
		want    ProofOutcome
	}{
		{"OfferNotInOutbox", w, func() *activity.Activity {
			acc := accept(t, w, offer, acceptOpts{})
			acc.Object.Activity.ID = o.dom.actor + "/activities/never-sent"
			return acc
		}, ErrForbidden, ""},
		{"OfferNotAddressedToTheSender", other, func() *activity.Activity {
			return accept(t, other, offer, acceptOpts{})
		}, ErrForbidden, ""},
		{"WrongInReplyTo", w, func() *activity.Activity {
			return accept(t, w, offer, acceptOpts{inReplyTo: activity.NewHashlink([]byte("another anchor"))})
		}, ErrInvalid, ""},
		{"NoReceipt", w, func() *activity.Activity {
			acc := accept(t, w, offer, acceptOpts{})
			acc.Result = nil
			return acc
		}, ErrInvalid, ""},
		{"TwoAttachments", w, func() *activity.Activity {
			acc := accept(t, w, offer, acceptOpts{})
			r := acc.Result.AnchorReceipt
			r.Attachment = append(r.Attachment, r.Attachment[0])
			return acc
		}, ErrInvalid, ""},
		{"AttachmentNotAProof", w, func() *activity.Activity {
			acc := accept(t, w, offer, acceptOpts{})
			acc.Result.AnchorReceipt.Attachment[0] = json.RawMessage(`{"proof":"no"}`)
			return acc
		}, ErrInvalid, ""},
		{"SignedByAnotherKey", w, func() *activity.Activity {
			return accept(t, w, offer, acceptOpts{key: rogue})
		}, vc.ErrInvalidProof, ""},
		{"CreatedBeforeIssueMinusSkew", w, func() *activity.Activity {
			return accept(t, w, offer, acceptOpts{created: issued.Add(-skew - time.Second)})
		}, nil, ProofOutOfWindow},
		{"CreatedAfterEndPlusSkew", w, func() *activity.Activity {
			return accept(t, w, offer, acceptOpts{created: end.Add(skew + time.Second)})
		}, nil, ProofOutOfWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := o.proofs(ProofOutOfWindow)
			got, err := o.w.HandleAccept(context.Background(), Inbound{Activity: tt.build(), Actor: tt.actor.actor})
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, got)
			for actor, r := range o.rows(a.Seq) {
				require.Nil(t, r.Proof, "nothing recorded for %s", actor)
			}
			require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)
			if tt.want == ProofOutOfWindow {
				require.Equal(t, before+1, o.proofs(ProofOutOfWindow))
			}
			require.Zero(t, o.proofs(ProofAdded))
		})
	}

	// The edges of the window hold: just inside both ends is a proof.
	t.Run("CreatedJustInsideTheWindow", func(t *testing.T) {
		got, err := o.deliver(w, acceptOpts{created: end.Add(skew - time.Second)})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, got)
		require.Equal(t, store.AnchorCompleted, o.anchorRow(a.Seq).Status)
	})
}

func TestProofForAFailedAnchorIsLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	o := newOrigin(t, st)
	b := o.witness("b")
	o.setPolicy("OutOf(1,system)")
	a := o.anchor(1)
	_, err := st.AnchorFailPending(ctx, store.AnchorFailParams{Seq: a.Seq, Reason: "test: no witness answered"})
	require.NoError(t, err)

	got, err := o.deliver(b, acceptOpts{})
	require.NoError(t, err)
	require.Equal(t, ProofLate, got)
	require.Equal(t, store.AnchorFailed, o.anchorRow(a.Seq).Status, "a late proof does not revive a failed anchor")
	require.Empty(t, o.anchorRow(a.Seq).Hashlink)
	require.Nil(t, o.rows(a.Seq)[b.actor].Proof)
	require.Equal(t, 1.0, o.proofs(ProofLate))
	require.Zero(t, testutil.ToFloat64(o.w.m.completed))
	require.Empty(t, o.completedSeqs())
}

// However many deliveries of the proofs race, the anchor completes once.
func TestConcurrentProofsCompleteOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		for round := range 5 {
			o := newOrigin(t, st)
			b, c := o.witness("b"+string(rune('0'+round))), o.witness("c"+string(rune('0'+round)))
			o.setPolicy("OutOf(2,system)")
			a := o.anchor(1)
			require.Len(t, o.selectedActors(a.Seq), 2)

			const n = 8
			accepts := make([]Inbound, n)
			for i := range accepts {
				w := []testDomain{b, c}[i%2]
				accepts[i] = Inbound{Activity: accept(t, w, o.offerTo(w.actor), acceptOpts{}), Actor: w.actor}
			}
			var wg sync.WaitGroup
			outcomes := make([]ProofOutcome, n)
			errs := make([]error, n)
			start := make(chan struct{})
			for i := range accepts {
				wg.Go(func() {
					<-start
					outcomes[i], errs[i] = o.w.HandleAccept(context.Background(), accepts[i])
				})
			}
			close(start)
			wg.Wait()
			for i := range errs {
				require.NoError(t, errs[i], "delivery %d", i)
			}
			require.Equal(t, 2, count(outcomes, ProofAdded), "outcomes %v", outcomes)
			require.Equal(t, store.AnchorCompleted, o.anchorRow(a.Seq).Status, "round %d: outcomes %v", round, outcomes)
			require.Equal(t, 1.0, testutil.ToFloat64(o.w.m.completed), "completed once")
			require.Equal(t, []int64{a.Seq}, o.completedSeqs())
			require.Equal(t, float64(n-2), o.proofs(ProofDuplicate)+o.proofs(ProofLate))
			// This round's witnesses are not the next round's.
			for _, w := range []testDomain{b, c} {
				require.NoError(t, st.RelationshipDelete(context.Background(), store.RelationshipWitness, w.actor))
			}
		}
	})
}

func count[T comparable](xs []T, x T) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func TestCredentialAndLinkCarryEveryProof(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		o := newOrigin(t, st)
		b, c := o.witness("b"), o.witness("c")
		o.setPolicy("OutOf(2,system)")
		a := o.anchor(2)
		for _, w := range []testDomain{b, c} {
			got, err := o.deliver(w, acceptOpts{})
			require.NoError(t, err)
			require.Equal(t, ProofAdded, got)
		}
		require.Equal(t, store.AnchorCompleted, o.anchorRow(a.Seq).Status)
		wa, err := st.WitnessAnchorGet(ctx, a.Seq)
		require.NoError(t, err)

		resolvers := map[string]vc.ResolveKeyFunc{o.dom.did: o.dom.resolver(t), b.did: b.resolver(t), c.did: c.resolver(t)}
		checkCredential := func(t *testing.T, cred *vc.Credential) {
			t.Helper()
			proofs := cred.Proofs()
			require.Len(t, proofs, 3)
			require.Equal(t, o.dom.identity().verificationMethod(), proofs[0].VerificationMethod, "the origin's proof first")
			var methods []string
			for _, p := range proofs {
				methods = append(methods, p.VerificationMethod)
				did, _, _ := strings.Cut(p.VerificationMethod, "#")
				require.NoError(t, vc.VerifyProof(ctx, cred, p, resolvers[did]), p.VerificationMethod)
			}
			require.ElementsMatch(t, []string{o.dom.identity().verificationMethod(), b.identity().verificationMethod(), c.identity().verificationMethod()}, methods)
		}

		cred, err := Credential(ctx, st, wa)
		require.NoError(t, err)
		require.Equal(t, wa.VCID, cred.ID())
		checkCredential(t, cred)

		link, ok, err := Link(ctx, st, a.Seq, activity.MediaTypeGzipBase64)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, wa.Hashlink, link.Anchor, "published with the offered anchor")
		var offered activity.Link
		require.NoError(t, json.Unmarshal(wa.Link, &offered))
		require.Equal(t, offered.Original, link.Original)
		require.Equal(t, offered.Related, link.Related)
		require.Len(t, link.Replies, 1)
		require.Equal(t, activity.MediaTypeJSONLD, link.Replies[0].Type)
		content, err := link.Replies[0].Content(vc.MaxDocumentSize)
		require.NoError(t, err)
		inLink, err := vc.ParseCredential(content)
		require.NoError(t, err)
		checkCredential(t, inLink)

		_, ok, err = Link(ctx, st, a.Seq+1000, activity.MediaTypeGzipBase64)
		require.NoError(t, err)
		require.False(t, ok, "an anchor never offered has no witnessed link")
	})
}
