package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
)

func exercisePipeline(t *testing.T, setup setupFunc) {
	t.Run("CAS", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		big := bytes.Repeat([]byte{0, 1, 2, 254, 255}, 400_000)
		require.NoError(t, s.CASPut(ctx, "QmBig", big))
		require.NoError(t, s.CASPut(ctx, "QmBig", big), "idempotent")
		got, err := s.CASGet(ctx, "QmBig")
		require.NoError(t, err)
		require.Equal(t, big, got)
		_, err = s.CASGet(ctx, "QmMissing")
		require.ErrorIs(t, err, store.ErrNotFound)
		// The same bytes are found by their sha2-256 digest, the hash a hashlink names.
		sum := sha256.Sum256(big)
		got, err = s.CASGetBySHA256(ctx, sum[:])
		require.NoError(t, err)
		require.Equal(t, big, got)
		other := sha256.Sum256([]byte("not stored"))
		_, err = s.CASGetBySHA256(ctx, other[:])
		require.ErrorIs(t, err, store.ErrNotFound)
		ok, err := s.CASExistsBySHA256(ctx, sum[:])
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.CASExistsBySHA256(ctx, other[:])
		require.NoError(t, err)
		require.False(t, ok)
		// Inside a transaction, content stored in it is there, and gone with its rollback.
		fresh := []byte("stored in a transaction that rolls back")
		freshSum := sha256.Sum256(fresh)
		rollback := errors.New("roll back")
		require.ErrorIs(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.CASPut(ctx, "QmFresh", fresh); err != nil {
				return err
			}
			ok, err := tx.CASExistsBySHA256(ctx, freshSum[:])
			require.NoError(t, err)
			require.True(t, ok)
			return rollback
		}), rollback)
		ok, err = s.CASExistsBySHA256(ctx, freshSum[:])
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("AnchorsObservedExactlyOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var seqs []int64
		for i, status := range []string{store.AnchorCompleted, store.AnchorPending, store.AnchorCompleted} {
			a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{
				AnchorString: fmt.Sprintf("%d.QmCore%d", i+1, i), CoreIndexCID: fmt.Sprintf("QmCore%d", i),
				OpCount: i + 1, Backend: "local", Status: status, Record: []byte(`{"r":1}`), Signature: []byte{9},
			})
			require.NoError(t, err)
			require.Equal(t, status, a.Status)
			require.Equal(t, status == store.AnchorCompleted, a.CompletedAt != nil)
			require.Nil(t, a.ObservedAt)
			seqs = append(seqs, a.Seq)
		}
		require.Less(t, seqs[0], seqs[1])
		require.Less(t, seqs[1], seqs[2])
		dup, err := s.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "1.QmCore0", CoreIndexCID: "QmCore0", OpCount: 1, Backend: "local", Status: store.AnchorPending})
		require.NoError(t, err, "an identical batch is a second anchor")
		require.Greater(t, dup.Seq, seqs[2])

		list, err := s.AnchorList(ctx, store.AnchorListParams{AfterSeq: seqs[0], Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 3)
		require.Equal(t, "2.QmCore1", list[0].AnchorString)
		got, err := s.AnchorGet(ctx, seqs[2])
		require.NoError(t, err)
		require.Equal(t, []byte(`{"r":1}`), got.Record)
		require.Equal(t, []byte{9}, got.Signature)
		_, err = s.AnchorGet(ctx, dup.Seq+100)
		require.ErrorIs(t, err, store.ErrNotFound)

		// Completed anchors come out in order; the pending one never does.
		for _, want := range []int64{seqs[0], seqs[2]} {
			err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				a, err := tx.AnchorNextToObserve(ctx)
				require.NoError(t, err)
				require.Equal(t, want, a.Seq)
				return tx.AnchorMarkObserved(ctx, a.Seq)
			})
			require.NoError(t, err)
		}
		_, err = s.AnchorNextToObserve(ctx)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, s.AnchorMarkObserved(ctx, seqs[0]), store.ErrNotFound, "observed once")
		require.ErrorIs(t, s.AnchorMarkObserved(ctx, seqs[1]), store.ErrNotFound, "pending anchors are not observed")
		a, err := s.AnchorGet(ctx, seqs[0])
		require.NoError(t, err)
		require.NotNil(t, a.ObservedAt)
	})

	t.Run("ConcurrentObserversTakeEachAnchorOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const anchors = 40
		for i := range anchors {
			_, err := s.AnchorInsert(ctx, store.AnchorInsertParams{
				AnchorString: fmt.Sprintf("1.QmC%d", i), CoreIndexCID: fmt.Sprintf("QmC%d", i), OpCount: 1,
				Backend: "local", Status: store.AnchorCompleted,
			})
			require.NoError(t, err)
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					var got int64
					err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
						a, err := tx.AnchorNextToObserve(ctx)
						if err != nil {
							return err
						}
						got = a.Seq
						return tx.AnchorMarkObserved(ctx, a.Seq)
					})
					if errors.Is(err, store.ErrNotFound) {
						return
					}
					// assert, not require: FailNow must not be called off the test goroutine.
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					seen[got]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, seen, anchors)
		for seq, n := range seen {
			require.Equal(t, 1, n, "anchor %d observed %d times", seq, n)
		}
	})

	// The observer claims an anchor by marking it first in its index transaction: a second
	// observer's mark must wait for that transaction, and find the anchor observed if it commits.
	t.Run("AMarkWaitsForAnUncommittedMark", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		errRollback := errors.New("roll back")
		for _, commit := range []bool{true, false} {
			a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{
				AnchorString: fmt.Sprintf("1.QmWait%v", commit), CoreIndexCID: "QmWait", OpCount: 1,
				Backend: "local", Status: store.AnchorCompleted,
			})
			require.NoError(t, err)
			second := make(chan error, 1)
			err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				if err := tx.AnchorMarkObserved(ctx, a.Seq); err != nil {
					return err
				}
				started := make(chan struct{})
				go func() {
					close(started)
					second <- s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
						return tx.AnchorMarkObserved(ctx, a.Seq)
					})
				}()
				<-started
				select {
				case err := <-second:
					return fmt.Errorf("the second mark did not wait: %v", err)
				default:
				}
				if !commit {
					return errRollback
				}
				return nil
			})
			if commit {
				require.NoError(t, err)
				require.ErrorIs(t, anchordtest.WaitOrTimeout(t, second, 30*time.Second), store.ErrNotFound, "observed by the first")
			} else {
				require.ErrorIs(t, err, errRollback)
				require.NoError(t, anchordtest.WaitOrTimeout(t, second, 30*time.Second), "the first rolled back: the second marks it")
			}
			got, err := s.AnchorGet(ctx, a.Seq)
			require.NoError(t, err)
			require.NotNil(t, got.ObservedAt)
		}
	})

	t.Run("DIDOperations", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		ops := []store.DIDOperation{
			{Suffix: "EiA", AnchorSeq: 2, Index: 0, Type: "update", Request: []byte("u")},
			{Suffix: "EiA", AnchorSeq: 1, Index: 3, Type: "create", Request: []byte("c")},
			{Suffix: "EiB", AnchorSeq: 1, Index: 4, Type: "create", Request: []byte("c2")},
			{Suffix: "EiA", AnchorSeq: 5, Index: 1, Type: "recover", Request: []byte("r")},
		}
		require.NoError(t, new(Indexer).Index(ctx, s, ops))
		require.NoError(t, s.DIDOperationInsertMany(ctx, ops[:2]), "re-observing is harmless")
		list, err := s.DIDOperationList(ctx, "EiA")
		require.NoError(t, err)
		require.Len(t, list, 3)
		require.Equal(t, []string{"create", "update", "recover"}, []string{list[0].Type, list[1].Type, list[2].Type})
		require.Equal(t, []int64{1, 2, 5}, []int64{list[0].AnchorSeq, list[1].AnchorSeq, list[2].AnchorSeq})
		require.Equal(t, 3, list[0].Index)
		for _, op := range list {
			require.Nil(t, op.Request, "the index keeps no request: the batch files hold it")
			require.Empty(t, op.AnchorString, "no such anchor")
		}
		none, err := s.DIDOperationList(ctx, "EiZ")
		require.NoError(t, err)
		require.Empty(t, none)
		lists, err := s.DIDOperationLists(ctx, []string{"EiZ", "EiB", "EiA", "EiB"})
		require.NoError(t, err)
		require.Len(t, lists, 2, "a suffix without operations is absent")
		require.Equal(t, list, lists["EiA"], "as DIDOperationList gives it")
		one, err := s.DIDOperationList(ctx, "EiB")
		require.NoError(t, err)
		require.Equal(t, one, lists["EiB"], "a suffix asked twice is listed once")
		lists, err = s.DIDOperationLists(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, lists)

		// Page by page, with the cursor each page returns, every suffix comes once, in order.
		var all []string
		for after, pages := "", 0; ; pages++ {
			require.Less(t, pages, 10, "the cursor moves on")
			page, next, err := s.DIDSuffixList(ctx, after, 1)
			require.NoError(t, err)
			if len(page) == 0 {
				require.Equal(t, after, next, "the end keeps the cursor")
				break
			}
			require.Len(t, page, 1)
			all, after = append(all, page...), next
		}
		require.Equal(t, []string{"EiA", "EiB"}, all)
		all, _, err = s.DIDSuffixList(ctx, "", 10)
		require.NoError(t, err)
		require.Contains(t, all, "EiA")
		require.Contains(t, all, "EiB")

		last, err := s.DIDLastAnchors(ctx, []string{"EiA", "EiB", "EiZ"})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"EiA": 5, "EiB": 1}, last)

		// Many suffixes at once (past SQLite's per-statement IN-list chunk).
		var many []store.DIDOperation
		var suffixes []string
		for i := range 2500 {
			sfx := fmt.Sprintf("EiMany%04d", i)
			suffixes = append(suffixes, sfx)
			many = append(many, store.DIDOperation{Suffix: sfx, AnchorSeq: int64(10 + i%3), Index: i, Type: "create", Request: []byte("x")})
		}
		require.NoError(t, new(Indexer).Index(ctx, s, many))
		last, err = s.DIDLastAnchors(ctx, suffixes)
		require.NoError(t, err)
		require.Len(t, last, 2500)
		require.Equal(t, int64(11), last["EiMany0001"])
	})

	t.Run("DIDOperationsCarryTheirAnchor", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		f, err := foreignAnchor(t, s, originA, "hl:"+randomName("carry"))
		require.NoError(t, err)
		mine := localAnchor(t, s, store.AnchorCompleted)
		require.NoError(t, new(Indexer).Index(ctx, s, []store.DIDOperation{
			{Suffix: "EiC", AnchorSeq: f.Seq, Index: 0, Type: "create", Request: []byte("c"), Origin: "ignored", AnchorString: "ignored"},
			{Suffix: "EiC", AnchorSeq: mine.Seq, Index: 2, Type: "deactivate"},
		}))
		want := []store.DIDOperation{
			{Suffix: "EiC", AnchorSeq: f.Seq, Index: 0, Type: "create", Origin: originA, AnchorString: f.AnchorString},
			{Suffix: "EiC", AnchorSeq: mine.Seq, Index: 2, Type: "deactivate", AnchorString: mine.AnchorString},
		}
		list, err := s.DIDOperationList(ctx, "EiC")
		require.NoError(t, err)
		require.Equal(t, want, list)
		lists, err := s.DIDOperationLists(ctx, []string{"EiC"})
		require.NoError(t, err)
		require.Equal(t, want, lists["EiC"])
	})
}
