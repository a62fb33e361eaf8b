package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// exerciseInboxBounds covers what keeps the inbox and the outbox bounded against a peer that
// posts without end: handled inbox rows expire, the inbox collection's positions survive the
// expiry, and a repeated request is answered once per interval.
func exerciseInboxBounds(t *testing.T, setup setupFunc) {
	t.Run("ActivityInboxDoneRowsExpire", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		kept := inboxInsert(t, s, "https://b.example/activities/kept")
		expiring := inboxInsert(t, s, "https://b.example/activities/expiring")
		queued := inboxInsert(t, s, "https://b.example/activities/queued")
		parked := inboxInsert(t, s, "https://b.example/activities/parked")
		rows := claimInbox(t, s, "a", 10, time.Hour)
		require.Len(t, rows, 4)
		bySeq := map[int64]store.InboxActivity{}
		for _, r := range rows {
			bySeq[r.Seq] = r
		}
		require.NoError(t, s.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: bySeq[kept].Claim()}))
		require.NoError(t, s.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: bySeq[expiring].Claim(), Keep: time.Hour}))
		require.NoError(t, s.ActivityInboxRetry(ctx, store.ActivityRetryParams{Claim: bySeq[queued].Claim(), Error: "e", Backoff: time.Hour}))
		require.NoError(t, s.ActivityInboxPark(ctx, store.ActivityRetryParams{Claim: bySeq[parked].Claim(), Error: "bad"}))

		p := store.ExpiredDeleteParams{Table: "ap_inbox", Column: "expires_at", Limit: 10}
		soon := time.Now().Add(time.Minute)
		p.Now = &soon
		n, err := s.ExpiredDeleteMany(ctx, p)
		require.NoError(t, err)
		require.Zero(t, n, "a handled row stays for its retention")

		later := time.Now().Add(2 * time.Hour)
		p.Now = &later
		n, err = s.ExpiredDeleteMany(ctx, p)
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "only the done row with a retention expires")
		_, err = s.ActivityInboxGet(ctx, expiring)
		require.ErrorIs(t, err, store.ErrNotFound)
		for _, seq := range []int64{kept, queued, parked} {
			_, err := s.ActivityInboxGet(ctx, seq)
			require.NoError(t, err, "done without retention, queued and parked rows stay")
		}
	})

	t.Run("ActivityInboxPositionsSurviveExpiry", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		last, err := s.ActivityInboxLastSeq(ctx)
		require.NoError(t, err)
		require.Zero(t, last)
		var seqs []int64
		for _, id := range []string{"1", "2", "3"} {
			seqs = append(seqs, inboxInsert(t, s, "https://b.example/activities/"+id))
		}
		for _, r := range claimInbox(t, s, "a", 10, time.Hour) {
			require.NoError(t, s.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: r.Claim(), Keep: time.Minute}))
		}
		later := time.Now().Add(time.Hour)
		n, err := s.ExpiredDeleteMany(ctx, store.ExpiredDeleteParams{Table: "ap_inbox", Column: "expires_at", Limit: 10, Now: &later})
		require.NoError(t, err)
		require.Equal(t, int64(3), n, "every row expired, the newest included")
		last, err = s.ActivityInboxLastSeq(ctx)
		require.NoError(t, err)
		require.Zero(t, last)

		// A reader that had read up to the last position finds the next row after it: a position
		// is never handed out again, even once the rows that held it are gone.
		next := inboxInsert(t, s, "https://b.example/activities/4")
		require.Greater(t, next, seqs[2])
		page, err := s.ActivityInboxList(ctx, store.ActivityPageParams{After: seqs[2], Limit: int(next - seqs[2])})
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, next, page[0].Seq)
		page, err = s.ActivityInboxList(ctx, store.ActivityPageParams{After: 0, Limit: int(seqs[2])})
		require.NoError(t, err)
		require.Empty(t, page, "expired positions leave an empty page, not a shifted one")
	})

	t.Run("RelationshipAnswerOncePerInterval", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		now := time.Now()
		answer := func(activity string, status string, at time.Time) bool {
			t.Helper()
			ok, err := s.RelationshipAnswer(ctx, store.RelationshipAnswerParams{
				Kind: store.RelationshipFollower, Actor: "https://b.example/x", Status: status,
				ActivityID: activity, Interval: time.Minute, Now: &at,
			})
			require.NoError(t, err)
			return ok
		}
		require.True(t, answer("https://b.example/activities/f1", store.RelationshipAccepted, now), "a new follower is answered")
		require.False(t, answer("https://b.example/activities/f2", store.RelationshipAccepted, now.Add(time.Second)),
			"a repeat within the interval is not")
		r, err := s.RelationshipGet(ctx, store.RelationshipFollower, "https://b.example/x")
		require.NoError(t, err)
		require.Equal(t, store.RelationshipAccepted, r.Status)
		require.Equal(t, "https://b.example/activities/f2", r.ActivityID, "the latest request is recorded")
		require.False(t, answer("https://b.example/activities/f3", store.RelationshipAccepted, now.Add(59*time.Second)),
			"the interval runs from the last answer, not the last request")
		require.True(t, answer("https://b.example/activities/f4", store.RelationshipAccepted, now.Add(61*time.Second)))
		require.True(t, answer("https://b.example/activities/f5", store.RelationshipPending, now.Add(62*time.Second)),
			"another status is always answered")

		// A relationship written by RelationshipUpsert has no answer time: the first answer goes.
		require.NoError(t, s.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipWitnessing,
			Actor: "https://b.example/x", Status: store.RelationshipAccepted, ActivityID: "https://b.example/activities/i1"}))
		ok, err := s.RelationshipAnswer(ctx, store.RelationshipAnswerParams{Kind: store.RelationshipWitnessing,
			Actor: "https://b.example/x", Status: store.RelationshipAccepted, ActivityID: "https://b.example/activities/i2", Interval: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	})

	t.Run("RelationshipAnswerConcurrentRepeatsAnswerOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		p := store.RelationshipAnswerParams{Kind: store.RelationshipFollower, Actor: "https://b.example/x",
			Status: store.RelationshipAccepted, ActivityID: "https://b.example/activities/f0", Interval: time.Hour}
		ok, err := s.RelationshipAnswer(ctx, p)
		require.NoError(t, err)
		require.True(t, ok)
		var mu sync.Mutex
		answered := 0
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				q := p
				q.ActivityID = "https://b.example/activities/f" + string(rune('a'+i))
				err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					ok, err := tx.RelationshipAnswer(ctx, q)
					if ok {
						mu.Lock()
						answered++
						mu.Unlock()
					}
					return err
				})
				require.NoError(t, err)
			})
		}
		wg.Wait()
		require.Zero(t, answered, "repeats within the interval are never answered, however many run at once")
	})
}
