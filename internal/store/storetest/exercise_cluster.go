package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseCluster(t *testing.T, setup setupFunc) {
	t.Run("OpQueueTaskEntriesFenceAcks", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		require.ErrorIs(t, s.OpQueueTaskCheck(ctx, "a"), store.ErrLeaseLost, "no entry yet")
		require.ErrorIs(t, s.OpQueueTaskRefresh(ctx, "a"), store.ErrLeaseLost, "refresh never creates")
		require.NoError(t, s.OpQueueTaskTouch(ctx, "a"))
		require.NoError(t, s.OpQueueTaskRefresh(ctx, "a"))
		require.NoError(t, s.OpQueueTaskTouch(ctx, "b"))
		require.NoError(t, s.OpQueueTaskTouch(ctx, "a"), "refresh")
		require.NoError(t, s.OpQueueTaskCheck(ctx, "a"))

		_, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{
			queued("op-a1", "s1", "a"), queued("op-a2", "s2", "a"), queued("op-b1", "s3", "b"), queued("op-l1", "s4", "local"),
		})
		require.NoError(t, err)
		orphans, err := s.OpQueueOrphans(ctx, 10, "local")
		require.NoError(t, err)
		require.Empty(t, orphans, "every owner is alive; the embedded owner is never an orphan")

		// Nothing is older than an hour.
		taken, err := s.OpQueueTaskTakeOver(ctx, time.Hour, "")
		require.NoError(t, err)
		require.Empty(t, taken)

		// Everything not refreshed since now is "expired" with a zero expiration, except b.
		time.Sleep(2 * time.Millisecond) // the database clock must move past the last touch
		taken, err = s.OpQueueTaskTakeOver(ctx, 0, "b")
		require.NoError(t, err)
		require.Equal(t, []string{"a"}, taken)
		require.ErrorIs(t, s.OpQueueTaskCheck(ctx, "a"), store.ErrLeaseLost)
		require.ErrorIs(t, s.OpQueueTaskRefresh(ctx, "a"), store.ErrLeaseLost, "a learns it was taken over")
		require.NoError(t, s.OpQueueTaskCheck(ctx, "b"))

		orphans, err = s.OpQueueOrphans(ctx, 10, "local")
		require.NoError(t, err)
		require.Len(t, orphans, 2)
		require.Equal(t, "op-a1", orphans[0].OpID)
		require.Equal(t, "a", orphans[0].InstanceID)
		one, err := s.OpQueueOrphans(ctx, 1, "local")
		require.NoError(t, err)
		require.Len(t, one, 1, "bounded")

		require.NoError(t, s.OpQueueTaskDelete(ctx, "b"))
		require.ErrorIs(t, s.OpQueueTaskCheck(ctx, "b"), store.ErrLeaseLost)
	})

	t.Run("TakeOverWaitsForAnAckInFlight", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		require.NoError(t, s.OpQueueTaskTouch(ctx, "slow"))
		ids, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{queued("op-1", "s1", "slow")})
		require.NoError(t, err)
		time.Sleep(2 * time.Millisecond)

		// The slow instance's Ack holds its entry; a take-over started meanwhile must wait and
		// then find the operation gone, so it reposts nothing that was anchored.
		entered := make(chan struct{})
		release := make(chan struct{})
		ackDone := make(chan error, 1)
		go func() {
			ackDone <- s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				if err := tx.OpQueueTaskCheck(ctx, "slow"); err != nil {
					return err
				}
				if _, err := tx.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: "slow"}); err != nil {
					return err
				}
				close(entered)
				<-release
				return nil
			})
		}()
		<-entered
		takeDone := make(chan []string, 1)
		go func() {
			var taken []string
			_ = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				var err error
				taken, err = tx.OpQueueTaskTakeOver(ctx, 0, "")
				return err
			})
			takeDone <- taken
		}()
		select {
		case <-takeDone:
			t.Fatal("take-over did not wait for the Ack holding the entry")
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		require.NoError(t, <-ackDone)
		require.Equal(t, []string{"slow"}, <-takeDone)
		orphans, err := s.OpQueueOrphans(ctx, 10, "")
		require.NoError(t, err)
		require.Empty(t, orphans, "the acked operation is not reposted")
	})
}

func exerciseAnchoredOps(t *testing.T, setup setupFunc) {
	t.Run("AnchoredOpsRecognisesDuplicates", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var many []string
		for i := range 1500 {
			many = append(many, fmt.Sprintf("op-%04d", i))
		}
		require.NoError(t, s.AnchoredOpsInsert(ctx, 1, many[:1200], time.Hour))
		got, err := s.AnchoredOpsFilter(ctx, many)
		require.NoError(t, err)
		require.Len(t, got, 1200)
		require.True(t, got["op-0000"])
		require.False(t, got["op-1300"])

		// A transaction that anchors a duplicate fails as a whole.
		err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			return tx.AnchoredOpsInsert(ctx, 2, []string{"op-1300", "op-0005"}, time.Hour)
		})
		require.ErrorIs(t, err, store.ErrConflict)
		got, err = s.AnchoredOpsFilter(ctx, []string{"op-1300"})
		require.NoError(t, err)
		require.Empty(t, got, "rolled back")

		// A failed anchor's operations are forgotten, and only those: one named that another
		// anchor recorded stays, as does one of the failed anchor's that is not named.
		require.NoError(t, s.AnchoredOpsInsert(ctx, 3, []string{"op-1400"}, time.Hour))
		require.NoError(t, s.AnchoredOpsDeleteByAnchor(ctx, 1, append(slices.Clone(many[1:1200]), "op-1400", "op-1499")))
		got, err = s.AnchoredOpsFilter(ctx, many)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"op-0000": true, "op-1400": true}, got)
		require.NoError(t, s.AnchoredOpsDeleteByAnchor(ctx, 1, nil))
		require.NoError(t, s.AnchoredOpsDeleteByAnchor(ctx, 1, []string{"op-0000"}))
		got, err = s.AnchoredOpsFilter(ctx, many)
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"op-1400": true}, got)
	})

	t.Run("DIDPendingAllowsOneOperationPerDID", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		reserve := func(suffix, opID string, ttl time.Duration) bool {
			ok, err := s.DIDPendingReserve(ctx, store.DIDPendingParams{Suffix: suffix, OpID: opID, TTL: ttl})
			require.NoError(t, err)
			return ok
		}
		require.True(t, reserve("did-a", "op-1", time.Hour))
		require.False(t, reserve("did-a", "op-2", time.Hour), "another operation's live reservation holds the DID")
		require.True(t, reserve("did-a", "op-1", time.Hour), "the holder may reserve again (a retried request)")
		require.True(t, reserve("did-b", "op-2", time.Hour), "other DIDs are free")

		// Releasing with the wrong operation leaves the reservation; with the right one ends it.
		require.NoError(t, s.DIDPendingRelease(ctx, []store.DIDPendingKey{{Suffix: "did-a", OpID: "op-9"}}))
		require.False(t, reserve("did-a", "op-3", time.Hour))
		require.NoError(t, s.DIDPendingRelease(ctx, []store.DIDPendingKey{{Suffix: "did-a", OpID: "op-1"}, {Suffix: "did-b", OpID: "op-2"}}))
		require.True(t, reserve("did-a", "op-3", time.Hour))

		// A reservation whose operation was parked, or that expired, is taken over.
		_, err := s.DeadLetterInsert(ctx, store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "op-3", Payload: []byte("{}"), Reason: "test"})
		require.NoError(t, err)
		require.True(t, reserve("did-a", "op-4", time.Hour), "op-3 was parked")
		require.True(t, reserve("did-c", "op-5", time.Microsecond))
		time.Sleep(2 * time.Millisecond) // the database clock must pass the expiry; nothing to signal
		require.True(t, reserve("did-c", "op-6", time.Hour), "op-5's reservation expired")
		require.False(t, reserve("did-c", "op-7", time.Hour))

		// Concurrent reservations of one DID: exactly one wins.
		wins := make(chan bool, 20)
		for i := range 20 {
			go func() {
				ok, err := s.DIDPendingReserve(ctx, store.DIDPendingParams{Suffix: "did-d", OpID: fmt.Sprintf("race-%d", i), TTL: time.Hour})
				if err != nil {
					t.Errorf("reserve: %v", err)
				}
				wins <- ok
			}()
		}
		won := 0
		for range 20 {
			if <-wins {
				won++
			}
		}
		require.Equal(t, 1, won)
	})

	// Intake reads a DID's state only after it has reserved the DID, and the observer ends the
	// reservation of an operation in the transaction that indexes it. That read sees the
	// operation only if a reservation cannot be taken before the transaction commits.
	t.Run("DIDPendingReleaseCommitsWithTheIndexRows", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		a := localAnchor(t, s, store.AnchorCompleted)
		ok, err := s.DIDPendingReserve(ctx, store.DIDPendingParams{Suffix: "did-e", OpID: "op-1", TTL: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)

		released, commit := make(chan struct{}), make(chan struct{})
		indexed := make(chan error, 1)
		go func() {
			indexed <- s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				if err := new(Indexer).Index(ctx, tx, []store.DIDOperation{{Suffix: "did-e", AnchorSeq: a.Seq, Type: "update", Request: []byte("u1")}}); err != nil {
					return err
				}
				if err := tx.DIDPendingRelease(ctx, []store.DIDPendingKey{{Suffix: "did-e", OpID: "op-1"}}); err != nil {
					return err
				}
				close(released)
				<-commit
				return nil
			})
		}()
		<-released
		type attempt struct {
			ok   bool
			rows int
			err  error
		}
		reserveThenRead := func() attempt {
			ok, err := s.DIDPendingReserve(ctx, store.DIDPendingParams{Suffix: "did-e", OpID: "op-2", TTL: time.Hour})
			if err != nil || !ok {
				return attempt{ok: ok, err: err}
			}
			rows, err := s.DIDOperationLists(ctx, []string{"did-e"})
			return attempt{ok: true, rows: len(rows["did-e"]), err: err}
		}
		during := make(chan attempt, 1)
		go func() { during <- reserveThenRead() }() // waits for the commit, or finds the DID held
		close(commit)
		require.NoError(t, <-indexed)
		got := <-during
		require.NoError(t, got.err)
		if !got.ok {
			got = reserveThenRead() // it was refused while op-1 still held the DID: now it is free
			require.NoError(t, got.err)
			require.True(t, got.ok)
		}
		require.Equal(t, 1, got.rows, "a reservation taken after the release sees the rows committed with it")
	})
}
