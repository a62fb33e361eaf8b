package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

type setupFunc func(t *testing.T) (store.Store, Opener)

func queued(opID, suffix, instance string) store.OpQueueInsertParams {
	return store.OpQueueInsertParams{
		OpID: opID, Suffix: suffix, Type: "create", Request: []byte(`{"type":"create","n":"` + opID + `"}`),
		InstanceID: instance, Lifespan: time.Hour,
	}
}

// listQueued pages through an instance's queued operations, pageSize at a time.
func listQueued(t *testing.T, s store.Store, instance string, pageSize int) []store.QueuedOp {
	t.Helper()
	var got []store.QueuedOp
	var after int64
	for {
		page, err := s.OpQueueList(context.Background(), store.OpQueueListParams{InstanceID: instance, AfterID: after, Limit: pageSize})
		require.NoError(t, err)
		if len(page) == 0 {
			return got
		}
		got = append(got, page...)
		after = page[len(page)-1].ID
	}
}

func exerciseOpQueue(t *testing.T, setup setupFunc) {
	t.Run("OpQueueUpsertListDelete", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var ops []store.OpQueueInsertParams
		for i := range 25 {
			ops = append(ops, queued(fmt.Sprintf("op-%02d", i), fmt.Sprintf("suffix-%02d", i), "a"))
		}
		ops = append(ops, queued("op-b", "suffix-b", "b"))
		now, err := s.Now(ctx)
		require.NoError(t, err)
		ids, err := s.OpQueueUpsertMany(ctx, ops)
		require.NoError(t, err)
		require.Len(t, ids, len(ops))
		for i := 1; i < 25; i++ {
			require.Greater(t, ids[i], ids[i-1], "ids in input order")
		}

		// Paging through instance a's rows.
		got := listQueued(t, s, "a", 10)
		require.Len(t, got, 25)
		first := got[0]
		require.Equal(t, "op-00", first.OpID)
		require.Equal(t, "suffix-00", first.Suffix)
		require.Equal(t, "create", first.Type)
		require.Equal(t, ops[0].Request, first.Request)
		require.Equal(t, 0, first.Attempts)
		require.WithinDuration(t, now.Add(time.Hour), first.ExpiresAt, 10*time.Second, "expiry from the database clock")
		require.WithinDuration(t, now, first.AvailableAt, 10*time.Second)
		require.WithinDuration(t, now, first.EnqueuedAt, 10*time.Second)

		owned, err := s.OpQueueOwnedIDs(ctx, store.OpQueueDeleteParams{IDs: []int64{ids[0], ids[25], ids[0] + 1000}, InstanceID: "a"})
		require.NoError(t, err)
		require.Equal(t, map[int64]bool{ids[0]: true}, owned)

		// Ack is fenced by instance: b's id is not deleted by a.
		n, err := s.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: []int64{ids[0], ids[1], ids[25]}, InstanceID: "a"})
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		rest, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 100})
		require.NoError(t, err)
		require.Len(t, rest, 23)
		bs, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "b", Limit: 100})
		require.NoError(t, err)
		require.Len(t, bs, 1)
	})

	t.Run("OpQueueUpsertTransfersOwnership", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		ids, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{queued("op-1", "s1", "a")})
		require.NoError(t, err)
		// The same message delivered again to instance b: no duplicate, b owns it now.
		again := queued("op-1", "s1", "b")
		again.Attempts = 3
		ids2, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{again})
		require.NoError(t, err)
		require.Equal(t, ids, ids2)
		as, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, as)
		bs, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "b", Limit: 10})
		require.NoError(t, err)
		require.Len(t, bs, 1)
		require.Equal(t, 3, bs[0].Attempts)
		// a's late Ack deletes nothing.
		n, err := s.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: "a"})
		require.NoError(t, err)
		require.Zero(t, n)
	})

	// A group commit of thousands (intake's MaxCommit) in one call, with operations already
	// queued among new ones: every id in input order, the queued ones keeping theirs.
	t.Run("OpQueueUpsertManyLargeGroup", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		old, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{queued("op-0100", "s100", "a"), queued("op-2400", "s2400", "a")})
		require.NoError(t, err)
		ops := make([]store.OpQueueInsertParams, 2500)
		for i := range ops {
			ops[i] = queued(fmt.Sprintf("op-%04d", i), fmt.Sprintf("s%d", i), "b")
		}
		ids, err := s.OpQueueUpsertMany(ctx, ops)
		require.NoError(t, err)
		require.Len(t, ids, len(ops))
		require.Equal(t, old[0], ids[100])
		require.Equal(t, old[1], ids[2400])
		seen := map[int64]bool{}
		prev := int64(0)
		for i, id := range ids {
			require.False(t, seen[id], "id %d given twice", id)
			seen[id] = true
			if i != 100 && i != 2400 {
				require.Greater(t, id, prev, "new rows' ids in input order")
				prev = id
			}
		}
		require.Len(t, listQueued(t, s, "b", 1000), len(ops), "every operation queued once, owned by b")
	})

	t.Run("OpQueueRetryIsFenced", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		ids, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{queued("op-1", "s1", "a")})
		require.NoError(t, err)
		later := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
		require.NoError(t, s.OpQueueRetry(ctx, store.OpQueueRetryParams{
			ID: ids[0], InstanceID: "a", Attempts: 2, History: []string{"attempt 1: cas down", "attempt 2: cas down"}, AvailableAt: later,
		}))
		got, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 1})
		require.NoError(t, err)
		require.Equal(t, 2, got[0].Attempts)
		require.Equal(t, []string{"attempt 1: cas down", "attempt 2: cas down"}, got[0].History)
		require.True(t, later.Equal(got[0].AvailableAt), "want %s got %s", later, got[0].AvailableAt)

		err = s.OpQueueRetry(ctx, store.OpQueueRetryParams{ID: ids[0], InstanceID: "b", Attempts: 9, AvailableAt: later})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		err = s.OpQueueRetry(ctx, store.OpQueueRetryParams{ID: ids[0] + 1000, InstanceID: "a", Attempts: 9, AvailableAt: later})
		require.ErrorIs(t, err, store.ErrLeaseLost)
	})

	t.Run("OpQueueDeleteInAnchorTransactionRollsBack", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		ids, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{queued("op-1", "s1", "a"), queued("op-2", "s2", "a")})
		require.NoError(t, err)
		// The anchor's transaction fails after deleting: the operations stay queued.
		err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			n, err := tx.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: "a"})
			require.NoError(t, err)
			require.Equal(t, int64(2), n)
			_, err = tx.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "2.Qm1", CoreIndexCID: "Qm1", OpCount: 2, Backend: "local", Status: store.AnchorCompleted})
			require.NoError(t, err)
			return fmt.Errorf("crash before commit")
		})
		require.Error(t, err)
		left, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 10})
		require.NoError(t, err)
		require.Len(t, left, 2)
		anchors, err := s.AnchorList(ctx, store.AnchorListParams{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, anchors)
	})

	t.Run("DeadLetters", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var ids []int64
		for i := range 5 {
			kind := store.DeadLetterOperation
			if i%2 == 1 {
				kind = store.DeadLetterMessage
			}
			id, err := s.DeadLetterInsert(ctx, store.DeadLetter{
				Kind: kind, Ref: fmt.Sprintf("ref-%d", i), Topic: "operation", Payload: []byte{byte(i), 0},
				Reason: "max attempts reached", Attempts: 30, History: []string{"attempt 1: boom"},
			})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		all, err := s.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 100})
		require.NoError(t, err)
		require.Len(t, all, 5)
		ops, err := s.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterOperation, Limit: 100})
		require.NoError(t, err)
		require.Len(t, ops, 3)
		page, err := s.DeadLetterList(ctx, store.DeadLetterListParams{AfterID: ids[2], Limit: 1})
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, ids[3], page[0].ID)

		d, err := s.DeadLetterGet(ctx, ids[1])
		require.NoError(t, err)
		require.Equal(t, store.DeadLetterMessage, d.Kind)
		require.Equal(t, "ref-1", d.Ref)
		require.Equal(t, "operation", d.Topic)
		require.Equal(t, []byte{1, 0}, d.Payload)
		require.Equal(t, "max attempts reached", d.Reason)
		require.Equal(t, 30, d.Attempts)
		require.Equal(t, []string{"attempt 1: boom"}, d.History)
		require.WithinDuration(t, time.Now(), d.CreatedAt, 10*time.Second)

		require.NoError(t, s.DeadLetterDelete(ctx, ids[1]))
		require.ErrorIs(t, s.DeadLetterDelete(ctx, ids[1]), store.ErrNotFound)
		_, err = s.DeadLetterGet(ctx, ids[1])
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
