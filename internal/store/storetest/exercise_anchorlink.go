package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// localAnchor records one of this domain's anchors with the given status.
func localAnchor(t *testing.T, s store.Executor, status string) store.Anchor {
	t.Helper()
	a, err := s.AnchorInsert(context.Background(), store.AnchorInsertParams{
		AnchorString: "1." + randomName("QmLocal"), CoreIndexCID: randomName("QmLocal"), OpCount: 1, Backend: "local", Status: status,
	})
	require.NoError(t, err)
	return a
}

// foreignAnchor records another domain's anchor under hashlink, observed.
func foreignAnchor(t *testing.T, s store.Executor, origin, hashlink string) (store.Anchor, error) {
	t.Helper()
	return s.AnchorInsert(context.Background(), store.AnchorInsertParams{
		AnchorString: "1." + randomName("QmForeign"), CoreIndexCID: randomName("QmForeign"), OpCount: 1,
		Backend: store.AnchorBackendFederation, Status: store.AnchorCompleted, Origin: origin, Hashlink: hashlink, Observed: true,
	})
}

const originA = "https://a.example/services/anchord"

func exerciseAnchorLinks(t *testing.T, setup setupFunc) {
	t.Run("AnchorsPublishedInSequenceOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		a1 := localAnchor(t, s, store.AnchorCompleted)
		failed := localAnchor(t, s, store.AnchorFailed)
		pending := localAnchor(t, s, store.AnchorPending)
		_, err := foreignAnchor(t, s, originA, "hl:foreign")
		require.NoError(t, err)
		a4 := localAnchor(t, s, store.AnchorCompleted)

		next, err := s.AnchorNextToPublish(ctx)
		require.NoError(t, err)
		require.Equal(t, a1.Seq, next.Seq)
		require.Empty(t, next.Hashlink)
		require.Nil(t, next.PublishedAt)
		require.NoError(t, s.AnchorMarkPublished(ctx, a1.Seq, "hl:one"))
		require.ErrorIs(t, s.AnchorMarkPublished(ctx, a1.Seq, "hl:one"), store.ErrNotFound, "published once")
		require.ErrorIs(t, s.AnchorMarkPublished(ctx, failed.Seq-100, "hl:x"), store.ErrNotFound)

		// A failed anchor is never published; a pending one is next, and holds back those after it.
		next, err = s.AnchorNextToPublish(ctx)
		require.NoError(t, err)
		require.Equal(t, pending.Seq, next.Seq)
		require.Equal(t, store.AnchorPending, next.Status)

		require.ErrorIs(t, s.AnchorMarkPublished(ctx, a4.Seq, "hl:one"), store.ErrConflict, "hashlinks are unique")
		require.ErrorIs(t, s.AnchorMarkPublished(ctx, a4.Seq, "hl:foreign"), store.ErrConflict)
		got, err := s.AnchorGet(ctx, a1.Seq)
		require.NoError(t, err)
		require.Equal(t, "hl:one", got.Hashlink)
		require.NotNil(t, got.PublishedAt)
		require.Empty(t, got.Origin)

		require.NoError(t, s.AnchorMarkPublished(ctx, pending.Seq, "hl:three"))
		require.NoError(t, s.AnchorMarkPublished(ctx, a4.Seq, "hl:four"))
		_, err = s.AnchorNextToPublish(ctx)
		require.ErrorIs(t, err, store.ErrNotFound)

		// A witnessed anchor collecting proofs does not hold back those after it.
		witnessed, err := s.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "1.witnessed", CoreIndexCID: "cid-witnessed",
			OpCount: 1, Backend: store.AnchorBackendWitness, Status: store.AnchorPending, Record: []byte("{}")})
		require.NoError(t, err)
		a6 := localAnchor(t, s, store.AnchorCompleted)
		next, err = s.AnchorNextToPublish(ctx)
		require.NoError(t, err)
		require.Equal(t, a6.Seq, next.Seq)
		require.NoError(t, s.AnchorMarkPublished(ctx, a6.Seq, "hl:six"))
		_, err = s.AnchorCompletePending(ctx, witnessed.Seq)
		require.NoError(t, err)
		next, err = s.AnchorNextToPublish(ctx)
		require.NoError(t, err)
		require.Equal(t, witnessed.Seq, next.Seq, "published once complete")
	})

	t.Run("ForeignAnchorsRecordedObserved", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		f, err := foreignAnchor(t, s, originA, "hl:f1")
		require.NoError(t, err)
		require.Equal(t, originA, f.Origin)
		require.Equal(t, "hl:f1", f.Hashlink)
		require.Equal(t, store.AnchorBackendFederation, f.Backend)
		require.NotNil(t, f.CompletedAt)
		require.NotNil(t, f.ObservedAt, "indexed in the transaction that records it")
		require.Nil(t, f.PublishedAt)

		_, err = foreignAnchor(t, s, originA, "hl:f1")
		require.ErrorIs(t, err, store.ErrConflict, "one anchor per hashlink")
		_, err = s.AnchorNextToObserve(ctx)
		require.ErrorIs(t, err, store.ErrNotFound, "the observer never reads it again")
		_, err = s.AnchorNextToPublish(ctx)
		require.ErrorIs(t, err, store.ErrNotFound, "not ours to publish")

		f2, err := foreignAnchor(t, s, originA, "hl:f2")
		require.NoError(t, err)
		got, err := s.AnchorsByHashlink(ctx, []string{"hl:f1", "hl:f2", "hl:none"})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"hl:f1": f.Seq, "hl:f2": f2.Seq}, got)
		got, err = s.AnchorsByHashlink(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, got)
		list, err := s.AnchorList(ctx, store.AnchorListParams{AfterSeq: 0, Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "hl:f2", list[1].Hashlink)
	})

	t.Run("AnchorsKeepTheSecondTheyWereIssued", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const issued = int64(1_800_000_007)
		f, err := s.AnchorInsert(ctx, store.AnchorInsertParams{
			AnchorString: "1." + randomName("QmForeign"), CoreIndexCID: randomName("QmForeign"), OpCount: 1,
			Backend: store.AnchorBackendFederation, Status: store.AnchorCompleted, Origin: originA, Hashlink: "hl:issued",
			Observed: true, IssuedAt: issued,
		})
		require.NoError(t, err)
		require.Equal(t, issued, f.IssuedAt)
		local := localAnchor(t, s, store.AnchorCompleted)
		require.Zero(t, local.IssuedAt, "none recorded")
		// A second past 2038, which 32 bits do not hold (another domain may claim any).
		far, err := s.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "1.far", CoreIndexCID: randomName("QmFar"), OpCount: 1,
			Backend: "local", Status: store.AnchorCompleted, IssuedAt: 4_000_000_000})
		require.NoError(t, err)
		require.Equal(t, int64(4_000_000_000), far.IssuedAt)
		got, err := s.AnchorGet(ctx, f.Seq)
		require.NoError(t, err)
		require.Equal(t, issued, got.IssuedAt)

		suffix := randomName("EiIssued")
		require.NoError(t, new(Indexer).Index(ctx, s, []store.DIDOperation{
			{Suffix: suffix, AnchorSeq: f.Seq, Index: 0, Type: "create"},
			{Suffix: suffix, AnchorSeq: local.Seq, Index: 0, Type: "update"},
		}))
		list, err := s.DIDOperationList(ctx, suffix)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, []int64{issued, 0}, []int64{list[0].AnchorIssuedAt, list[1].AnchorIssuedAt})
		lists, err := s.DIDOperationLists(ctx, []string{suffix})
		require.NoError(t, err)
		require.Equal(t, list, lists[suffix])
	})

	t.Run("DIDLatestAnchorsAndOrigins", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		f, err := foreignAnchor(t, s, originA, "hl:created")
		require.NoError(t, err)
		mine := localAnchor(t, s, store.AnchorCompleted)
		later := localAnchor(t, s, store.AnchorCompleted)
		require.NoError(t, s.AnchorMarkPublished(ctx, mine.Seq, "hl:mine"))
		require.NoError(t, new(Indexer).Index(ctx, s, []store.DIDOperation{
			{Suffix: "did1", AnchorSeq: f.Seq, Index: 0, Type: "create", Request: []byte("c1")},
			{Suffix: "did2", AnchorSeq: f.Seq, Index: 1, Type: "create", Request: []byte("c2")},
			{Suffix: "did1", AnchorSeq: mine.Seq, Index: 0, Type: "update", Request: []byte("u1"), Origin: "ignored"},
			{Suffix: "did1", AnchorSeq: later.Seq, Index: 0, Type: "update", Request: []byte("u2")},
		}))

		ops, err := s.DIDOperationList(ctx, "did1")
		require.NoError(t, err)
		require.Len(t, ops, 3)
		require.Equal(t, []string{originA, "", ""}, []string{ops[0].Origin, ops[1].Origin, ops[2].Origin})

		latest, err := s.DIDLatestAnchors(ctx, []string{"did1", "did2", "did3"}, later.Seq)
		require.NoError(t, err)
		require.Equal(t, map[string]store.AnchorRef{
			"did1": {Seq: mine.Seq, Hashlink: "hl:mine"},
			"did2": {Seq: f.Seq, Hashlink: "hl:created"},
		}, latest)
		latest, err = s.DIDLatestAnchors(ctx, []string{"did1"}, 1<<62)
		require.NoError(t, err)
		require.Equal(t, store.AnchorRef{Seq: later.Seq}, latest["did1"], "not published yet: no hashlink")
		latest, err = s.DIDLatestAnchors(ctx, []string{"did1", "did2"}, f.Seq)
		require.NoError(t, err)
		require.Empty(t, latest, "nothing before the first anchor")

		many := make([]string, 2500)
		for i := range many {
			many[i] = fmt.Sprintf("x%d", i)
		}
		many[2400] = "did2"
		latest, err = s.DIDLatestAnchors(ctx, many, 1<<62)
		require.NoError(t, err)
		require.Equal(t, map[string]store.AnchorRef{"did2": {Seq: f.Seq, Hashlink: "hl:created"}}, latest)
	})

	t.Run("WaitingAnchors", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		w := store.WaitingAnchor{Hashlink: "hl:child", Origin: originA, Sender: originA, Live: true, WaitingFor: "hl:parent", Event: []byte(`{"type":"AnchorEvent"}`)}
		require.NoError(t, s.WaitingAnchorInsert(ctx, w))
		again := w
		again.WaitingFor, again.Live = "hl:other", false
		require.NoError(t, s.WaitingAnchorInsert(ctx, again), "already waiting: left as it is")
		require.NoError(t, s.WaitingAnchorInsert(ctx, store.WaitingAnchor{Hashlink: "hl:c2", Origin: "https://b.example/x", Sender: originA, WaitingFor: "hl:p2", Event: []byte("{}")}))

		for origin, want := range map[string]int{"": 2, originA: 1, "https://c.example": 0} {
			n, err := s.WaitingAnchorCount(ctx, origin)
			require.NoError(t, err)
			require.Equal(t, want, n, origin)
		}
		ready, err := s.WaitingAnchorReady(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, ready, "no parent is applied")

		_, err = foreignAnchor(t, s, originA, "hl:parent")
		require.NoError(t, err)
		ready, err = s.WaitingAnchorReady(ctx, 10)
		require.NoError(t, err)
		require.Len(t, ready, 1)
		got := ready[0]
		require.False(t, got.CreatedAt.IsZero())
		got.CreatedAt = w.CreatedAt
		require.Equal(t, w, got)

		// Still missing another parent: it waits for that one.
		require.NoError(t, s.WaitingAnchorUpdate(ctx, "hl:child", "hl:grandparent"))
		ready, err = s.WaitingAnchorReady(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, ready)
		mine := localAnchor(t, s, store.AnchorCompleted)
		require.NoError(t, s.AnchorMarkPublished(ctx, mine.Seq, "hl:grandparent"))
		ready, err = s.WaitingAnchorReady(ctx, 10)
		require.NoError(t, err)
		require.Len(t, ready, 1, "a parent of ours counts once published")

		require.NoError(t, s.WaitingAnchorDelete(ctx, "hl:child"))
		require.ErrorIs(t, s.WaitingAnchorDelete(ctx, "hl:child"), store.ErrNotFound)
		require.ErrorIs(t, s.WaitingAnchorUpdate(ctx, "hl:child", "hl:x"), store.ErrNotFound)
		n, err := s.WaitingAnchorCount(ctx, "")
		require.NoError(t, err)
		require.Equal(t, 1, n)
	})

	t.Run("ConcurrentPublishersTakeTurns", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const anchors = 30
		for range anchors {
			localAnchor(t, s, store.AnchorCompleted)
		}
		var mu sync.Mutex
		var order []int64
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for {
					err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
						a, err := tx.AnchorNextToPublish(ctx)
						if err != nil {
							return err
						}
						// Each anchor's hashlink names the one published before it: a publisher
						// that did not wait its turn would find no hashlink there.
						if a.Seq > 1 {
							prev, err := tx.AnchorGet(ctx, a.Seq-1)
							if err != nil {
								return err
							}
							if prev.Hashlink == "" {
								return fmt.Errorf("anchor %d published before %d", a.Seq, prev.Seq)
							}
						}
						if err := tx.AnchorMarkPublished(ctx, a.Seq, fmt.Sprintf("hl:%d", a.Seq)); err != nil {
							return err
						}
						mu.Lock()
						order = append(order, a.Seq)
						mu.Unlock()
						return nil
					})
					if errors.Is(err, store.ErrNotFound) {
						// PostgreSQL may answer "none" to a waiter whose row was just taken;
						// the loop asks again until nothing is left.
						if _, err := s.AnchorNextToPublish(ctx); errors.Is(err, store.ErrNotFound) {
							return
						}
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
				}
			})
		}
		wg.Wait()
		require.Len(t, order, anchors)
		for i := range order {
			require.Equal(t, int64(i+1), order[i], "published in sequence, each once")
		}
	})
}
