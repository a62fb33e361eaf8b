package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func outboxInsert(t *testing.T, s store.Executor, id string, public bool, recipients ...string) store.OutboxActivity {
	t.Helper()
	a, err := s.ActivityOutboxInsert(context.Background(), store.ActivityOutboxInsertParams{
		ActivityID: id, Type: "Create", Body: []byte(`{"id":"` + id + `"}`), Public: public, Recipients: recipients,
	})
	require.NoError(t, err)
	return a
}

func claimDeliveries(t *testing.T, s store.Executor, owner string, limit int, ttl time.Duration) []store.ActivityDelivery {
	t.Helper()
	got, err := s.ActivityDeliveryClaim(context.Background(), store.ActivityClaimParams{Owner: owner, Limit: limit, TTL: ttl})
	require.NoError(t, err)
	return got
}

func inboxInsert(t *testing.T, s store.Executor, id string) int64 {
	t.Helper()
	seq, ok, err := s.ActivityInboxInsert(context.Background(), store.ActivityInboxInsertParams{
		ActivityID: id, Actor: "https://b.example/services/anchord", From: "https://b.example/services/anchord",
		Type: "Follow", Body: []byte(`{"id":"` + id + `"}`), Source: store.InboxSourceLive,
	})
	require.NoError(t, err)
	require.True(t, ok)
	return seq
}

func claimInbox(t *testing.T, s store.Executor, owner string, limit int, ttl time.Duration) []store.InboxActivity {
	t.Helper()
	got, err := s.ActivityInboxClaim(context.Background(), store.ActivityClaimParams{Owner: owner, Limit: limit, TTL: ttl})
	require.NoError(t, err)
	return got
}

func exerciseActivity(t *testing.T, setup setupFunc) {
	t.Run("ActivityOutboxPositionsArePublicAndDense", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		a := outboxInsert(t, s, "https://a.example/activities/1", true, "https://b.example/x", "https://c.example/x", "https://b.example/x")
		b := outboxInsert(t, s, "https://a.example/activities/2", false, "https://b.example/x")
		c := outboxInsert(t, s, "https://a.example/activities/3", true)
		require.Equal(t, int64(1), a.Position)
		require.Zero(t, b.Position)
		require.Equal(t, int64(2), c.Position)
		require.Less(t, a.Seq, b.Seq)
		require.WithinDuration(t, time.Now(), a.CreatedAt, time.Minute)

		n, err := s.ActivityOutboxCountPublic(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		page, err := s.ActivityOutboxListPublic(ctx, store.ActivityPageParams{After: 0, Limit: 10})
		require.NoError(t, err)
		require.Len(t, page, 2)
		require.Equal(t, a.ActivityID, page[0].ActivityID)
		require.Equal(t, c.ActivityID, page[1].ActivityID)
		require.Equal(t, []byte(`{"id":"https://a.example/activities/1"}`), page[0].Body)
		page, err = s.ActivityOutboxListPublic(ctx, store.ActivityPageParams{After: 1, Limit: 1})
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, int64(2), page[0].Position)

		got, err := s.ActivityOutboxGet(ctx, b.ActivityID)
		require.NoError(t, err)
		require.Equal(t, b.Seq, got.Seq)
		require.False(t, got.Public)
		_, err = s.ActivityOutboxGet(ctx, "https://a.example/activities/none")
		require.ErrorIs(t, err, store.ErrNotFound)

		// Duplicate recipients collapse into one delivery each.
		ds, err := s.ActivityDeliveryListByActivity(ctx, a.ActivityID)
		require.NoError(t, err)
		require.Len(t, ds, 2)
		require.Equal(t, "https://b.example/x", ds[0].Recipient)
		require.Equal(t, store.DeliveryPending, ds[0].Status)
		require.Equal(t, a.ActivityID, ds[0].ActivityID)

		// The latest delivery to a recipient is the one of the latest activity addressed to it.
		latest, err := s.ActivityDeliveryLatest(ctx, "https://b.example/x")
		require.NoError(t, err)
		require.Equal(t, ds[0].Recipient, latest.Recipient)
		require.GreaterOrEqual(t, latest.ID, ds[0].ID)
		_, err = s.ActivityDeliveryLatest(ctx, "https://nobody.example/x")
		require.ErrorIs(t, err, store.ErrNotFound)

		_, err = s.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{ActivityID: a.ActivityID, Type: "Create", Body: []byte("{}"), Public: true})
		require.ErrorIs(t, err, store.ErrConflict)
		n, err = s.ActivityOutboxCountPublic(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(2), n, "a refused insert takes no position")
	})

	t.Run("ActivityOutboxConcurrentPublicPositionsHaveNoGaps", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					_, err := tx.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{
						ActivityID: fmt.Sprintf("https://a.example/activities/c%d", i), Type: "Create", Body: []byte("{}"), Public: true,
					})
					return err
				})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		page, err := s.ActivityOutboxListPublic(ctx, store.ActivityPageParams{Limit: 100})
		require.NoError(t, err)
		require.Len(t, page, 40)
		for i, a := range page {
			require.Equal(t, int64(i+1), a.Position)
		}
	})

	t.Run("ActivityOutboxInsertRollsBackWithTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		boom := fmt.Errorf("caller failed")
		err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			outboxInsert(t, tx, "https://a.example/activities/rolled", true, "https://b.example/x")
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = s.ActivityOutboxGet(ctx, "https://a.example/activities/rolled")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Empty(t, claimDeliveries(t, s, "a", 10, time.Hour))
		require.Equal(t, int64(1), outboxInsert(t, s, "https://a.example/activities/next", true).Position)
	})

	t.Run("ActivityDeliveryLifecycle", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		outboxInsert(t, s, "https://a.example/activities/1", true, "https://b.example/x", "https://c.example/x", "https://d.example/x")

		got := claimDeliveries(t, s, "a", 10, time.Hour)
		require.Len(t, got, 3)
		require.Empty(t, claimDeliveries(t, s, "b", 10, time.Hour), "claimed rows are not claimed twice")
		for _, d := range got {
			require.Equal(t, "a", d.ClaimOwner)
			require.Equal(t, int64(1), d.ClaimTerm)
			require.Equal(t, []byte(`{"id":"https://a.example/activities/1"}`), d.Body)
			require.Equal(t, "https://a.example/activities/1", d.ActivityID)
		}
		delivered, retried, parked := got[0], got[1], got[2]

		stale := delivered.Claim()
		stale.Term++
		require.ErrorIs(t, s.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: stale, Keep: time.Hour}), store.ErrLeaseLost)
		require.NoError(t, s.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: delivered.Claim(), Keep: time.Hour}))
		require.ErrorIs(t, s.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: delivered.Claim(), Keep: time.Hour}), store.ErrLeaseLost,
			"a settled delivery takes no second outcome")
		d, err := s.ActivityDeliveryGet(ctx, delivered.ID)
		require.NoError(t, err)
		require.Equal(t, store.DeliveryDelivered, d.Status)
		require.Equal(t, 1, d.Attempts)
		require.NotNil(t, d.DeliveredAt)
		require.Empty(t, d.ClaimOwner)

		require.NoError(t, s.ActivityDeliveryRetry(ctx, store.ActivityRetryParams{Claim: retried.Claim(), Error: "503", HistoryLine: "attempt 1: 503", Backoff: time.Hour}))
		require.NoError(t, s.ActivityDeliveryPark(ctx, store.ActivityRetryParams{Claim: parked.Claim(), Error: "gone", HistoryLine: "attempt 1: gone"}))
		require.Empty(t, claimDeliveries(t, s, "b", 10, time.Hour), "neither the backed-off nor the parked delivery is due")

		d, err = s.ActivityDeliveryGet(ctx, retried.ID)
		require.NoError(t, err)
		require.Equal(t, store.DeliveryPending, d.Status)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, "503", d.LastError)
		require.Equal(t, []string{"attempt 1: 503"}, d.History)
		require.True(t, d.NextAttemptAt.After(time.Now().Add(30*time.Minute)))

		d, err = s.ActivityDeliveryGet(ctx, parked.ID)
		require.NoError(t, err)
		require.Equal(t, store.DeliveryParked, d.Status)
		require.ErrorIs(t, s.ActivityDeliveryRearm(ctx, retried.ID), store.ErrNotFound, "only a parked delivery is re-armed")
		require.NoError(t, s.ActivityDeliveryRearm(ctx, parked.ID))
		again := claimDeliveries(t, s, "b", 10, time.Hour)
		require.Len(t, again, 1)
		require.Equal(t, parked.ID, again[0].ID)
		require.Zero(t, again[0].Attempts)
		require.Equal(t, int64(2), again[0].ClaimTerm)
		require.Len(t, again[0].History, 2)
		require.Contains(t, again[0].History[1], "re-armed")

		_, err = s.ActivityDeliveryGet(ctx, 1<<40)
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ActivityDeliveryRetryWithoutBackoffIsDueAtOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		outboxInsert(t, s, "https://a.example/activities/1", true, "https://b.example/x")
		d := claimDeliveries(t, s, "a", 1, time.Hour)[0]
		require.NoError(t, s.ActivityDeliveryRetry(ctx, store.ActivityRetryParams{Claim: d.Claim(), Error: "x", HistoryLine: "x"}))
		again := claimDeliveries(t, s, "a", 1, time.Hour)
		require.Len(t, again, 1)
		require.Equal(t, 1, again[0].Attempts)
	})

	t.Run("ActivityDeliveryExpiredClaimCountsAsAnAttempt", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		outboxInsert(t, s, "https://a.example/activities/1", true, "https://b.example/x")
		first := claimDeliveries(t, s, "a", 1, 100*time.Millisecond)
		require.Len(t, first, 1)
		var taken []store.ActivityDelivery
		for deadline := time.Now().Add(20 * time.Second); len(taken) == 0; {
			require.True(t, time.Now().Before(deadline), "expired claim never reclaimed")
			if taken = claimDeliveries(t, s, "b", 1, time.Hour); len(taken) == 0 {
				time.Sleep(20 * time.Millisecond) // waiting for the database clock to pass claim_expires
			}
		}
		d := taken[0]
		require.Equal(t, "b", d.ClaimOwner)
		require.Equal(t, int64(2), d.ClaimTerm)
		require.Equal(t, 1, d.Attempts)
		require.Len(t, d.History, 1)
		require.Contains(t, d.History[0], "claim of a (term 1) expired without an outcome")
		require.ErrorIs(t, s.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: first[0].Claim()}), store.ErrLeaseLost)
		require.NoError(t, s.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: d.Claim()}))
	})

	t.Run("ActivityDeliveryConcurrentClaimersNeverShareARow", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		recipients := make([]string, 60)
		for i := range recipients {
			recipients[i] = fmt.Sprintf("https://r%d.example/x", i)
		}
		outboxInsert(t, s, "https://a.example/activities/1", true, recipients...)
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("w%d", w)
				for {
					got, err := s.ActivityDeliveryClaim(context.Background(), store.ActivityClaimParams{Owner: owner, Limit: 7, TTL: time.Hour})
					if err != nil || len(got) == 0 {
						return
					}
					mu.Lock()
					for _, d := range got {
						if prev, dup := seen[d.ID]; dup {
							t.Errorf("delivery %d claimed by %s and %s", d.ID, prev, owner)
						}
						seen[d.ID] = owner
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Len(t, seen, 60)
	})

	t.Run("ActivityReleaseClaimsFreesAnOwnersRows", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		inboxInsert(t, s, "https://b.example/activities/1")
		inboxInsert(t, s, "https://b.example/activities/2")
		got := claimInbox(t, s, "local", 10, time.Hour)
		require.Len(t, got, 2)
		require.Empty(t, claimInbox(t, s, "other", 10, time.Hour), "claimed for an hour")
		n, err := s.ActivityReleaseClaims(ctx, "nobody")
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = s.ActivityReleaseClaims(ctx, "local")
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		again := claimInbox(t, s, "local", 10, time.Hour)
		require.Len(t, again, 2, "the restarted owner takes its rows back at once")
		require.ErrorIs(t, s.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: got[0].Claim()}), store.ErrLeaseLost,
			"the previous life's claim no longer settles the row")
	})

	t.Run("ActivityInboxLifecycle", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		first := inboxInsert(t, s, "https://b.example/activities/1")
		second := inboxInsert(t, s, "https://b.example/activities/2")
		third := inboxInsert(t, s, "https://b.example/activities/3")
		require.Less(t, first, second)

		seq, ok, err := s.ActivityInboxInsert(ctx, store.ActivityInboxInsertParams{
			ActivityID: "https://b.example/activities/1", Actor: "x", From: "x", Type: "Follow", Body: []byte("{}"), Source: store.InboxSourceSync,
		})
		require.NoError(t, err)
		require.False(t, ok, "a second copy of an activity is not stored")
		require.Zero(t, seq)

		got := claimInbox(t, s, "a", 10, time.Hour)
		require.Len(t, got, 3)
		require.Equal(t, first, got[0].Seq, "oldest first")
		require.Equal(t, store.InboxSourceLive, got[0].Source)
		require.Equal(t, "https://b.example/services/anchord", got[0].Actor)
		require.Equal(t, "Follow", got[0].Type)
		require.Empty(t, claimInbox(t, s, "b", 10, time.Hour))

		require.NoError(t, s.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: got[0].Claim()}))
		require.ErrorIs(t, s.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: got[0].Claim()}), store.ErrLeaseLost)
		require.NoError(t, s.ActivityInboxRetry(ctx, store.ActivityRetryParams{Claim: got[1].Claim(), Error: "e", HistoryLine: "attempt 1: e", Backoff: time.Hour}))
		require.NoError(t, s.ActivityInboxPark(ctx, store.ActivityRetryParams{Claim: got[2].Claim(), Error: "bad", HistoryLine: "attempt 1: bad"}))
		require.Empty(t, claimInbox(t, s, "b", 10, time.Hour))

		a, err := s.ActivityInboxGet(ctx, first)
		require.NoError(t, err)
		require.Equal(t, store.InboxDone, a.Status)
		require.NotNil(t, a.DoneAt)
		a, err = s.ActivityInboxGetByActivity(ctx, "https://b.example/activities/2")
		require.NoError(t, err)
		require.Equal(t, store.InboxQueued, a.Status)
		require.Equal(t, []string{"attempt 1: e"}, a.History)
		a, err = s.ActivityInboxGet(ctx, third)
		require.NoError(t, err)
		require.Equal(t, store.InboxParked, a.Status)
		require.Equal(t, "bad", a.LastError)

		require.ErrorIs(t, s.ActivityInboxRearm(ctx, second), store.ErrNotFound)
		require.NoError(t, s.ActivityInboxRearm(ctx, third))
		again := claimInbox(t, s, "b", 10, time.Hour)
		require.Len(t, again, 1)
		require.Equal(t, third, again[0].Seq)
		require.Zero(t, again[0].Attempts)

		n, err := s.ActivityInboxLastSeq(ctx)
		require.NoError(t, err)
		require.Equal(t, third, n)
		list, err := s.ActivityInboxList(ctx, store.ActivityPageParams{After: first, Limit: int(third - first)})
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, second, list[0].Seq)
		require.Equal(t, third, list[1].Seq)
		_, err = s.ActivityInboxGet(ctx, 1<<40)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.ActivityInboxGetByActivity(ctx, "https://b.example/none")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("ActivityInboxExpiredClaimCountsAsAnAttempt", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		inboxInsert(t, s, "https://b.example/activities/1")
		first := claimInbox(t, s, "a", 1, 100*time.Millisecond)
		require.Len(t, first, 1)
		var taken []store.InboxActivity
		for deadline := time.Now().Add(20 * time.Second); len(taken) == 0; {
			require.True(t, time.Now().Before(deadline), "expired claim never reclaimed")
			if taken = claimInbox(t, s, "b", 1, time.Hour); len(taken) == 0 {
				time.Sleep(20 * time.Millisecond) // waiting for the database clock to pass claim_expires
			}
		}
		require.Equal(t, 1, taken[0].Attempts)
		require.Contains(t, taken[0].History[0], "claim of a (term 1) expired without an outcome")
		require.ErrorIs(t, s.ActivityInboxRetry(ctx, store.ActivityRetryParams{Claim: first[0].Claim()}), store.ErrLeaseLost)
	})

	t.Run("ActivityCounts", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		outboxInsert(t, s, "https://a.example/activities/1", true, "https://b.example/x", "https://c.example/x")
		d := claimDeliveries(t, s, "a", 1, time.Hour)[0]
		require.NoError(t, s.ActivityDeliveryPark(ctx, store.ActivityRetryParams{Claim: d.Claim(), Error: "x"}))
		inboxInsert(t, s, "https://b.example/activities/1")
		require.NoError(t, s.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: "https://b.example/x", Status: store.RelationshipAccepted}))
		require.NoError(t, s.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: "https://b.example/x", Status: store.RelationshipPending}))
		c, err := s.ActivityCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, store.ActivityCountsResult{DeliveriesPending: 1, DeliveriesParked: 1, InboxQueued: 1, Followers: 1}, c)
	})

	t.Run("ActorCache", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Microsecond)
		a := store.CachedActor{IRI: "https://b.example/services/anchord", Inbox: "https://b.example/services/anchord/inbox",
			Outbox: "https://b.example/services/anchord/outbox", KeyID: "https://b.example/services/anchord/keys/main-key",
			KeyPEM: "-----BEGIN Ed25519-----", Document: []byte(`{"id":"x"}`), FetchedAt: at}
		_, err := s.ActorCacheGet(ctx, a.IRI)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.ActorCacheUpsert(ctx, a))
		got, err := s.ActorCacheGet(ctx, a.IRI)
		require.NoError(t, err)
		require.Equal(t, a, got)
		a.Inbox, a.FetchedAt = "https://b.example/new-inbox", at.Add(time.Minute)
		require.NoError(t, s.ActorCacheUpsert(ctx, a))
		got, err = s.ActorCacheGet(ctx, a.IRI)
		require.NoError(t, err)
		require.Equal(t, a, got)
	})

	t.Run("Relationships", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		up := func(kind, actor, status, activity string) {
			require.NoError(t, s.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: kind, Actor: actor, Status: status, ActivityID: activity}))
		}
		up(store.RelationshipFollowing, "https://b.example/x", store.RelationshipPending, "https://a.example/activities/f1")
		up(store.RelationshipFollowing, "https://c.example/x", store.RelationshipPending, "https://a.example/activities/f2")
		up(store.RelationshipFollower, "https://b.example/x", store.RelationshipAccepted, "https://b.example/activities/f9")

		_, err := s.RelationshipSetStatus(ctx, store.RelationshipSetStatusParams{Kind: store.RelationshipFollowing,
			Actor: "https://b.example/x", ActivityID: "https://a.example/activities/other", Status: store.RelationshipAccepted})
		require.ErrorIs(t, err, store.ErrNotFound, "an answer to another Follow changes nothing")
		r, err := s.RelationshipSetStatus(ctx, store.RelationshipSetStatusParams{Kind: store.RelationshipFollowing,
			Actor: "https://b.example/x", ActivityID: "https://a.example/activities/f1", Status: store.RelationshipAccepted})
		require.NoError(t, err)
		require.Equal(t, store.RelationshipAccepted, r.Status)

		list, err := s.RelationshipList(ctx, store.RelationshipListParams{Kind: store.RelationshipFollowing, Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "https://b.example/x", list[0].Actor, "in creation order")
		// An upsert keeps a relationship's place.
		up(store.RelationshipFollowing, "https://b.example/x", store.RelationshipPending, "https://a.example/activities/f3")
		list, err = s.RelationshipList(ctx, store.RelationshipListParams{Kind: store.RelationshipFollowing, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, "https://b.example/x", list[0].Actor)
		require.Equal(t, "https://a.example/activities/f3", list[0].ActivityID)
		list, err = s.RelationshipList(ctx, store.RelationshipListParams{Kind: store.RelationshipFollowing, Offset: 1, Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "https://c.example/x", list[0].Actor)
		list, err = s.RelationshipList(ctx, store.RelationshipListParams{Kind: store.RelationshipFollower, Status: store.RelationshipAccepted, Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 1)

		n, err := s.RelationshipCount(ctx, store.RelationshipFollowing, "")
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
		n, err = s.RelationshipCount(ctx, store.RelationshipFollowing, store.RelationshipAccepted)
		require.NoError(t, err)
		require.Zero(t, n)

		got, err := s.RelationshipGet(ctx, store.RelationshipFollower, "https://b.example/x")
		require.NoError(t, err)
		require.Equal(t, "https://b.example/activities/f9", got.ActivityID)
		require.NoError(t, s.RelationshipDelete(ctx, store.RelationshipFollower, "https://b.example/x"))
		require.ErrorIs(t, s.RelationshipDelete(ctx, store.RelationshipFollower, "https://b.example/x"), store.ErrNotFound)
		_, err = s.RelationshipGet(ctx, store.RelationshipFollower, "https://b.example/x")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("AcceptLists", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		added, err := s.AcceptListInsert(ctx, store.AcceptListFollow, "https://b.example/x")
		require.NoError(t, err)
		require.True(t, added)
		added, err = s.AcceptListInsert(ctx, store.AcceptListFollow, "https://b.example/x")
		require.NoError(t, err)
		require.False(t, added)
		_, err = s.AcceptListInsert(ctx, store.AcceptListInviteWitness, "https://a.example/x")
		require.NoError(t, err)

		ok, err := s.AcceptListContains(ctx, store.AcceptListFollow, "https://b.example/x")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.AcceptListContains(ctx, store.AcceptListInviteWitness, "https://b.example/x")
		require.NoError(t, err)
		require.False(t, ok, "lists are per type")

		all, err := s.AcceptListList(ctx, "")
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, store.AcceptListFollow, all[0].Type)
		follow, err := s.AcceptListList(ctx, store.AcceptListFollow)
		require.NoError(t, err)
		require.Len(t, follow, 1)
		require.WithinDuration(t, time.Now(), follow[0].CreatedAt, time.Minute)

		removed, err := s.AcceptListDelete(ctx, store.AcceptListFollow, "https://b.example/x")
		require.NoError(t, err)
		require.True(t, removed)
		removed, err = s.AcceptListDelete(ctx, store.AcceptListFollow, "https://b.example/x")
		require.NoError(t, err)
		require.False(t, removed)
	})

	t.Run("SyncPositions", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		_, err := s.SyncPositionGet(ctx, "https://b.example/x!outbox")
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.SyncPositionSet(ctx, "https://b.example/x!outbox", `{"page":1}`))
		require.NoError(t, s.SyncPositionSet(ctx, "https://b.example/x!outbox", `{"page":2}`))
		pos, err := s.SyncPositionGet(ctx, "https://b.example/x!outbox")
		require.NoError(t, err)
		require.Equal(t, `{"page":2}`, pos)
	})

	t.Run("ActivityDeliveriesExpireOnceDelivered", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		outboxInsert(t, s, "https://a.example/activities/1", true, "https://b.example/x", "https://c.example/x")
		ds := claimDeliveries(t, s, "a", 10, time.Hour)
		require.NoError(t, s.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: ds[0].Claim()}))
		later := time.Now().Add(time.Minute)
		n, err := s.ExpiredDeleteMany(ctx, store.ExpiredDeleteParams{Table: "ap_deliveries", Column: "expires_at", Limit: 10, Now: &later})
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "only the delivered delivery expires")
		left, err := s.ActivityDeliveryListByActivity(ctx, "https://a.example/activities/1")
		require.NoError(t, err)
		require.Len(t, left, 1)
		require.Equal(t, ds[1].ID, left[0].ID)
	})
}
