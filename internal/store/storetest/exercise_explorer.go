package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// exerciseExplorer covers the read-only queries of the explorer page.
func exerciseExplorer(t *testing.T, setup setupFunc) {
	t.Run("AnchorListLatestPagesBackwards", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		empty, err := s.AnchorListLatest(ctx, store.AnchorListLatestParams{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, empty)

		var seqs []int64
		for i := range 7 {
			status := store.AnchorCompleted
			if i == 6 {
				status = store.AnchorPending
			}
			a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{
				AnchorString: fmt.Sprintf("%d.QmLatest%d", i+1, i), CoreIndexCID: fmt.Sprintf("QmLatest%d", i),
				OpCount: i + 1, Backend: "local", Status: status,
			})
			require.NoError(t, err)
			seqs = append(seqs, a.Seq)
		}

		var walked []int64
		before := int64(0)
		for {
			page, err := s.AnchorListLatest(ctx, store.AnchorListLatestParams{BeforeSeq: before, Limit: 3})
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 3)
			for _, a := range page {
				walked = append(walked, a.Seq)
			}
			if len(page) < 3 {
				break
			}
			before = page[len(page)-1].Seq
		}
		require.Equal(t, []int64{seqs[6], seqs[5], seqs[4], seqs[3], seqs[2], seqs[1], seqs[0]}, walked,
			"newest first, every anchor once, whatever its status")

		first, err := s.AnchorListLatest(ctx, store.AnchorListLatestParams{Limit: 1})
		require.NoError(t, err)
		require.Len(t, first, 1)
		require.Equal(t, "7.QmLatest6", first[0].AnchorString)
		require.Equal(t, 7, first[0].OpCount)
		require.Equal(t, store.AnchorPending, first[0].Status)

		below, err := s.AnchorListLatest(ctx, store.AnchorListLatestParams{BeforeSeq: seqs[1], Limit: 10})
		require.NoError(t, err)
		require.Len(t, below, 1)
		require.Equal(t, seqs[0], below[0].Seq, "BeforeSeq is exclusive")
	})

	t.Run("DeadLetterCountByKind", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		counts, err := s.DeadLetterCountByKind(ctx)
		require.NoError(t, err)
		require.Empty(t, counts)

		var ids []int64
		for i, kind := range []string{store.DeadLetterOperation, store.DeadLetterMessage, store.DeadLetterOperation, store.DeadLetterLedgerBatch, store.DeadLetterOperation} {
			id, err := s.DeadLetterInsert(ctx, store.DeadLetter{
				Kind: kind, Ref: fmt.Sprintf("ref-%d", i), Payload: []byte("p"), Reason: "exhausted", Attempts: 3,
			})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		counts, err = s.DeadLetterCountByKind(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{store.DeadLetterOperation: 3, store.DeadLetterMessage: 1, store.DeadLetterLedgerBatch: 1}, counts)

		require.NoError(t, s.DeadLetterDelete(ctx, ids[1]))
		counts, err = s.DeadLetterCountByKind(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{store.DeadLetterOperation: 3, store.DeadLetterLedgerBatch: 1}, counts,
			"a kind with no item left is absent")
	})
}
