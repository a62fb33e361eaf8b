package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// ledgerBatch inserts a pending ledger anchor and its batch (one transaction) and returns the
// batch id.
func ledgerBatch(t *testing.T, s store.Executor, anchor string) string {
	t.Helper()
	ctx := context.Background()
	a, err := s.AnchorInsert(ctx, store.AnchorInsertParams{
		AnchorString: anchor, CoreIndexCID: "Qm" + anchor, OpCount: 1, Backend: "ledger", Status: store.AnchorPending,
		Record: []byte(`{"anchor":"` + anchor + `"}`),
	})
	require.NoError(t, err)
	id, txn := randomHex(64), randomHex(64)
	require.NoError(t, s.LedgerBatchInsert(ctx, store.LedgerBatchInsertParams{
		HeaderSignature: id, DataChangeID: anchor, SignerPublicKey: "02" + randomHex(32),
		SerializedBatch: []byte("batch-list-" + anchor), AnchorSeq: a.Seq,
		Transactions: []store.LedgerTransaction{{HeaderSignature: txn, FamilyName: "anchord", FamilyVersion: "1.0", SignerPublicKey: "02ab"}},
	}))
	return id
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func claim(t *testing.T, s store.Executor, owner string, limit int, ttl time.Duration) []store.LedgerBatch {
	t.Helper()
	got, err := s.LedgerBatchClaim(context.Background(), store.LedgerBatchClaimParams{Owner: owner, Limit: limit, TTL: ttl})
	require.NoError(t, err)
	return got
}

func exerciseLedger(t *testing.T, setup setupFunc) {
	t.Run("LedgerBatchInsertAndGet", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		id := ledgerBatch(t, s, "1.QmA")
		b, err := s.LedgerBatchGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, id, b.HeaderSignature)
		require.Equal(t, "1.QmA", b.DataChangeID)
		require.Equal(t, []byte("batch-list-1.QmA"), b.SerializedBatch)
		require.False(t, b.Submitted)
		require.False(t, b.Trace)
		require.Empty(t, b.DLTStatus)
		require.Empty(t, b.ServiceID)
		require.Empty(t, b.ClaimOwner)
		require.Nil(t, b.ClaimExpires)
		require.Nil(t, b.SubmittedAt)
		require.Zero(t, b.ClaimTerm)
		require.Zero(t, b.Attempts)
		require.WithinDuration(t, time.Now(), b.Created, time.Minute)
		require.WithinDuration(t, time.Now(), b.NextAttemptAt, time.Minute)
		a, err := s.AnchorGet(ctx, b.AnchorSeq)
		require.NoError(t, err)
		require.Equal(t, "1.QmA", a.AnchorString)
		byAnchor, err := s.LedgerBatchGetByAnchor(ctx, a.Seq)
		require.NoError(t, err)
		require.Equal(t, b, byAnchor)
		_, err = s.LedgerBatchGetByAnchor(ctx, a.Seq+1000)
		require.ErrorIs(t, err, store.ErrNotFound)

		txns, err := s.LedgerTransactionList(ctx, id)
		require.NoError(t, err)
		require.Len(t, txns, 1)
		require.Equal(t, id, txns[0].BatchID)
		require.Equal(t, "anchord", txns[0].FamilyName)

		err = s.LedgerBatchInsert(ctx, store.LedgerBatchInsertParams{HeaderSignature: id, SignerPublicKey: "02",
			SerializedBatch: []byte{1}, AnchorSeq: a.Seq})
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = s.LedgerBatchGet(ctx, randomHex(64))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("LedgerClaimIsExclusiveUnderConcurrency", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const n = 60
		want := make(map[string]bool, n)
		for i := range n {
			want[ledgerBatch(t, s, fmt.Sprintf("%d.QmExcl", i+1))] = true
		}
		var mu sync.Mutex
		claimedBy := make(map[string][]string)
		var wg sync.WaitGroup
		for w := range 8 {
			owner := fmt.Sprintf("claimer-%d", w)
			wg.Go(func() {
				for {
					got, err := s.LedgerBatchClaim(ctx, store.LedgerBatchClaimParams{Owner: owner, Limit: 3, TTL: time.Hour})
					if !assert.NoError(t, err) || len(got) == 0 {
						return
					}
					mu.Lock()
					for _, b := range got {
						assert.Equal(t, owner, b.ClaimOwner)
						assert.Equal(t, int64(1), b.ClaimTerm)
						claimedBy[b.HeaderSignature] = append(claimedBy[b.HeaderSignature], owner)
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Len(t, claimedBy, n)
		for id, owners := range claimedBy {
			require.True(t, want[id])
			require.Len(t, owners, 1, "batch %s claimed by %v", id, owners)
		}
		counts, err := s.LedgerBatchCount(ctx)
		require.NoError(t, err)
		require.Equal(t, store.LedgerBatchCounts{Unsubmitted: n, Claimed: n}, counts)
	})

	t.Run("LedgerExpiredClaimIsReclaimableByDatabaseClock", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		held := ledgerBatch(t, s, "1.QmHeld")
		got := claim(t, s, "a", 10, time.Hour)
		require.Len(t, got, 1)
		require.Equal(t, held, got[0].HeaderSignature)
		now, err := s.Now(ctx)
		require.NoError(t, err)
		require.NotNil(t, got[0].ClaimExpires)
		require.WithinDuration(t, now.Add(time.Hour), *got[0].ClaimExpires, time.Minute, "claim_expires = database now + TTL")
		require.Empty(t, claim(t, s, "b", 10, time.Hour), "an unexpired claim is not taken")

		short := ledgerBatch(t, s, "2.QmShort")
		got = claim(t, s, "a", 10, 150*time.Millisecond)
		require.Len(t, got, 1)
		require.Equal(t, short, got[0].HeaderSignature)
		expires := *got[0].ClaimExpires
		require.False(t, got[0].MaybeSubmitted)

		var taken []store.LedgerBatch
		for deadline := time.Now().Add(20 * time.Second); len(taken) == 0; {
			require.True(t, time.Now().Before(deadline), "expired claim never reclaimed")
			taken = claim(t, s, "b", 10, time.Hour)
			after, err := s.Now(ctx)
			require.NoError(t, err)
			if len(taken) == 0 {
				time.Sleep(20 * time.Millisecond) // waiting for the database clock to pass claim_expires
				continue
			}
			require.False(t, after.Before(expires), "reclaimed at %s, before the claim expired at %s", after, expires)
		}
		require.Len(t, taken, 1)
		b := taken[0]
		require.Equal(t, short, b.HeaderSignature)
		require.Equal(t, "b", b.ClaimOwner)
		require.Equal(t, int64(2), b.ClaimTerm)
		require.Equal(t, 1, b.Attempts, "the expired claim counts as an attempt")
		require.True(t, b.MaybeSubmitted, "its holder may have sent it")
		require.Len(t, b.History, 1)
		require.Contains(t, b.History[0], "claim of a (term 1) expired without an outcome")

		// The expired holder's late writes are fenced off; the new holder's are not.
		old := store.LedgerClaim{BatchID: short, Owner: "a", Term: 1}
		require.ErrorIs(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: old, Attempted: true}), store.ErrLeaseLost)
		require.NoError(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: b.Claim(), Attempted: true, History: b.History}))
	})

	t.Run("LedgerTransitionsAreFencedByOwnerAndTerm", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		id := ledgerBatch(t, s, "1.QmFence")
		first := claim(t, s, "a", 1, time.Hour)[0]
		require.Equal(t, int64(1), first.ClaimTerm)
		require.NoError(t, s.LedgerBatchRelinquish(ctx, store.LedgerBatchRelinquishParams{Claim: first.Claim()}))
		second := claim(t, s, "b", 1, time.Hour)[0]
		require.Equal(t, int64(2), second.ClaimTerm)
		require.False(t, second.MaybeSubmitted, "a relinquished claim is not a lost one")
		require.Zero(t, second.Attempts)

		stale := []store.LedgerClaim{
			first.Claim(),                                 // old owner, old term
			{BatchID: id, Owner: "a", Term: 2},            // old owner, current term
			{BatchID: id, Owner: "b", Term: 1},            // current owner, old term
			{BatchID: randomHex(64), Owner: "b", Term: 2}, // no such batch
		}
		for _, c := range stale {
			require.ErrorIs(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: c, Attempted: true}), store.ErrLeaseLost)
			require.ErrorIs(t, s.LedgerBatchMarkFailed(ctx, store.LedgerBatchMarkFailedParams{Claim: c, Error: store.LedgerErrorBadRequest, Message: "late"}), store.ErrLeaseLost)
			require.ErrorIs(t, s.LedgerBatchRelinquish(ctx, store.LedgerBatchRelinquishParams{Claim: c, Attempted: true}), store.ErrLeaseLost)
		}
		b, err := s.LedgerBatchGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "b", b.ClaimOwner)
		require.False(t, b.Submitted)
		require.Empty(t, b.SubmissionError)
		require.Zero(t, b.Attempts)

		require.NoError(t, s.LedgerBatchMarkFailed(ctx, store.LedgerBatchMarkFailedParams{Claim: second.Claim(),
			Error: store.LedgerErrorBadRequest, Message: "Submitted Batches Invalid: bad signature", Attempted: true}))
		require.ErrorIs(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: second.Claim()}), store.ErrLeaseLost,
			"an outcome ends the claim")
		b, err = s.LedgerBatchGet(ctx, id)
		require.NoError(t, err)
		require.True(t, b.Submitted)
		require.Equal(t, store.LedgerErrorBadRequest, b.SubmissionError)
		require.Equal(t, "Submitted Batches Invalid: bad signature", b.SubmissionErrorMessage)
		require.Empty(t, b.ClaimOwner)
		require.Nil(t, b.ClaimExpires)
		require.Equal(t, 1, b.Attempts)
		require.Empty(t, claim(t, s, "c", 10, time.Hour), "a failed batch is never claimed again")
		unsettled, err := s.LedgerBatchListUnsettled(ctx, store.LedgerBatchListUnsettledParams{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, unsettled, "a failed batch has no status to poll")
		counts, err := s.LedgerBatchCount(ctx)
		require.NoError(t, err)
		require.Equal(t, store.LedgerBatchCounts{Failed: 1}, counts)
	})

	t.Run("LedgerRelinquishRespectsDueTime", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		later := ledgerBatch(t, s, "1.QmLater")
		soon := ledgerBatch(t, s, "2.QmSoon")
		got := claim(t, s, "a", 10, time.Hour)
		require.Len(t, got, 2)
		byID := map[string]store.LedgerBatch{got[0].HeaderSignature: got[0], got[1].HeaderSignature: got[1]}

		require.NoError(t, s.LedgerBatchRelinquish(ctx, store.LedgerBatchRelinquishParams{Claim: byID[later].Claim(),
			Attempted: true, Backoff: time.Hour, MaybeSubmitted: true, History: []string{"attempt 1: retry 503"}}))
		require.NoError(t, s.LedgerBatchRelinquish(ctx, store.LedgerBatchRelinquishParams{Claim: byID[soon].Claim(),
			Backoff: 0}))
		now, err := s.Now(ctx)
		require.NoError(t, err)
		b, err := s.LedgerBatchGet(ctx, later)
		require.NoError(t, err)
		require.Equal(t, 1, b.Attempts)
		require.True(t, b.MaybeSubmitted)
		require.Equal(t, []string{"attempt 1: retry 503"}, b.History)
		require.Empty(t, b.ClaimOwner)
		require.Nil(t, b.ClaimExpires)
		require.WithinDuration(t, now.Add(time.Hour), b.NextAttemptAt, time.Minute, "next attempt = database now + backoff")

		again := claim(t, s, "b", 10, time.Hour)
		require.Len(t, again, 1, "only the batch that is due")
		require.Equal(t, soon, again[0].HeaderSignature)
		require.Zero(t, again[0].Attempts, "a batch that was not sent does not count an attempt")
		require.Empty(t, claim(t, s, "c", 10, time.Hour))
	})

	t.Run("LedgerClaimTakesOldestDueFirst", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var ids []string
		for i := range 4 {
			ids = append(ids, ledgerBatch(t, s, fmt.Sprintf("%d.QmOrder", i+1)))
		}
		// Relinquish the last two first: the first two become due after them.
		byID := make(map[string]store.LedgerBatch)
		for _, b := range claim(t, s, "a", 4, time.Hour) {
			byID[b.HeaderSignature] = b
		}
		for _, i := range []int{2, 3, 0, 1} {
			require.NoError(t, s.LedgerBatchRelinquish(ctx, store.LedgerBatchRelinquishParams{Claim: byID[ids[i]].Claim()}))
		}
		got := claim(t, s, "b", 2, time.Hour)
		gotIDs := []string{got[0].HeaderSignature, got[1].HeaderSignature}
		want := []string{ids[2], ids[3]}
		sort.Strings(gotIDs)
		sort.Strings(want)
		require.Equal(t, want, gotIDs)
	})

	t.Run("LedgerStatusTransitionsAndResubmit", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var ids []string
		for i := range 5 {
			id := ledgerBatch(t, s, fmt.Sprintf("%d.QmStatus", i+1))
			ids = append(ids, id)
		}
		for _, b := range claim(t, s, "a", 10, time.Hour) {
			require.NoError(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: b.Claim(), Attempted: true}))
		}
		sort.Strings(ids)
		var listed []string
		after := ""
		for {
			page, err := s.LedgerBatchListUnsettled(ctx, store.LedgerBatchListUnsettledParams{AfterID: after, Limit: 2})
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			for _, b := range page {
				require.True(t, b.Submitted)
				require.Empty(t, b.SerializedBatch, "the listing leaves the bytes out")
				require.Equal(t, store.LedgerStatusPending, b.DLTStatus)
				require.NotNil(t, b.SubmittedAt)
				require.Equal(t, 1, b.Attempts)
				listed = append(listed, b.HeaderSignature)
			}
			after = page[len(page)-1].HeaderSignature
		}
		require.Equal(t, ids, listed, "every submitted batch, in id order")

		set := func(id, from, to string) error {
			return s.LedgerBatchSetStatus(ctx, store.LedgerBatchSetStatusParams{BatchID: id, From: from, To: to})
		}
		require.NoError(t, set(ids[0], store.LedgerStatusPending, store.LedgerStatusCommitted))
		require.ErrorIs(t, set(ids[0], store.LedgerStatusPending, store.LedgerStatusInvalid), store.ErrNotFound, "compare and set")
		require.NoError(t, set(ids[1], store.LedgerStatusPending, store.LedgerStatusInvalid))
		require.NoError(t, set(ids[2], store.LedgerStatusPending, store.LedgerStatusUnknown))
		require.NoError(t, set(ids[3], store.LedgerStatusPending, store.LedgerStatusUnknown))
		require.NoError(t, set(ids[3], store.LedgerStatusUnknown, store.LedgerStatusPending))
		counts, err := s.LedgerBatchCount(ctx)
		require.NoError(t, err)
		require.Equal(t, store.LedgerBatchCounts{Unsettled: 3, Committed: 1, Invalid: 1}, counts)

		// A lost batch goes back to the submitters, due at once, with its history.
		err = s.LedgerBatchResubmit(ctx, store.LedgerBatchResubmitParams{BatchID: ids[2], From: store.LedgerStatusPending})
		require.ErrorIs(t, err, store.ErrNotFound, "compare and set")
		require.NoError(t, s.LedgerBatchResubmit(ctx, store.LedgerBatchResubmitParams{BatchID: ids[2],
			From: store.LedgerStatusUnknown, History: []string{"lost by the ledger"}}))
		require.ErrorIs(t, s.LedgerBatchResubmit(ctx, store.LedgerBatchResubmitParams{BatchID: ids[0], From: store.LedgerStatusCommitted}),
			store.ErrNotFound, "a settled batch's status is final")
		got := claim(t, s, "b", 10, time.Hour)
		require.Len(t, got, 1)
		b := got[0]
		require.Equal(t, ids[2], b.HeaderSignature)
		require.False(t, b.Submitted)
		require.Empty(t, b.DLTStatus)
		require.Nil(t, b.SubmittedAt)
		require.Equal(t, 1, b.Attempts)
		require.False(t, b.MaybeSubmitted)
		require.Equal(t, []string{"lost by the ledger"}, b.History)
		require.Equal(t, int64(2), b.ClaimTerm)
		require.NoError(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: b.Claim(), Attempted: true, History: b.History}))
		b, err = s.LedgerBatchGet(ctx, ids[2])
		require.NoError(t, err)
		require.Equal(t, 2, b.Attempts)
		require.Equal(t, store.LedgerStatusPending, b.DLTStatus)
	})

	t.Run("LedgerBatchCommitManySettlesInBulk", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var ids []string
		for i := range 5 {
			ids = append(ids, ledgerBatch(t, s, fmt.Sprintf("%d.QmBulk", i+1)))
		}
		for _, b := range claim(t, s, "a", 10, time.Hour) {
			require.NoError(t, s.LedgerBatchMarkSubmitted(ctx, store.LedgerBatchMarkSubmittedParams{Claim: b.Claim(), Attempted: true}))
		}
		require.NoError(t, s.LedgerBatchSetStatus(ctx, store.LedgerBatchSetStatusParams{BatchID: ids[1], From: store.LedgerStatusPending, To: store.LedgerStatusUnknown}))
		failedAnchor, err := s.LedgerBatchGet(ctx, ids[2])
		require.NoError(t, err)
		_, err = s.AnchorFailPending(ctx, store.AnchorFailParams{Seq: failedAnchor.AnchorSeq, Reason: "odd"})
		require.NoError(t, err)

		got, err := s.LedgerBatchCommitMany(ctx, []store.LedgerBatchCommitParams{
			{BatchID: ids[0], From: store.LedgerStatusPending},
			{BatchID: ids[1], From: store.LedgerStatusUnknown},
			{BatchID: ids[2], From: store.LedgerStatusPending},
			{BatchID: ids[3], From: store.LedgerStatusUnknown}, // stale: it is PENDING
			{BatchID: randomHex(64), From: store.LedgerStatusPending},
		})
		require.NoError(t, err)
		moved := make(map[string]store.LedgerBatchCommitted)
		for _, c := range got {
			moved[c.BatchID] = c
		}
		require.Len(t, moved, 3)
		require.True(t, moved[ids[0]].AnchorCompleted)
		require.True(t, moved[ids[1]].AnchorCompleted)
		require.False(t, moved[ids[2]].AnchorCompleted, "its anchor was not pending")
		for _, id := range ids[:3] {
			b, err := s.LedgerBatchGet(ctx, id)
			require.NoError(t, err)
			require.Equal(t, store.LedgerStatusCommitted, b.DLTStatus)
			require.Equal(t, b.AnchorSeq, moved[id].AnchorSeq)
			txns, err := s.LedgerTransactionList(ctx, id)
			require.NoError(t, err)
			r, err := s.LedgerReceiptGet(ctx, txns[0].HeaderSignature)
			require.NoError(t, err)
			require.True(t, r.ResultValid)
			require.Equal(t, store.LedgerStatusCommitted, r.ExternalStatus)
			a, err := s.AnchorGet(ctx, b.AnchorSeq)
			require.NoError(t, err)
			if id == ids[2] {
				require.Equal(t, store.AnchorFailed, a.Status)
			} else {
				require.Equal(t, store.AnchorCompleted, a.Status)
				require.NotNil(t, a.CompletedAt)
			}
		}
		b, err := s.LedgerBatchGet(ctx, ids[3])
		require.NoError(t, err)
		require.Equal(t, store.LedgerStatusPending, b.DLTStatus)
		again, err := s.LedgerBatchCommitMany(ctx, []store.LedgerBatchCommitParams{{BatchID: ids[0], From: store.LedgerStatusPending}})
		require.NoError(t, err)
		require.Empty(t, again, "a committed batch is settled once")
		empty, err := s.LedgerBatchCommitMany(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, empty)
		counts, err := s.LedgerBatchCount(ctx)
		require.NoError(t, err)
		require.Equal(t, store.LedgerBatchCounts{Unsettled: 2, Committed: 3}, counts)
	})

	t.Run("LedgerReceipts", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		id := ledgerBatch(t, s, "1.QmReceipt")
		txns, err := s.LedgerTransactionList(ctx, id)
		require.NoError(t, err)
		r := store.LedgerReceipt{TransactionID: txns[0].HeaderSignature, ResultValid: false,
			ErrorMessage: "anchor already recorded", ExternalStatus: store.LedgerStatusInvalid}
		require.NoError(t, s.LedgerReceiptInsertMany(ctx, []store.LedgerReceipt{r}))
		require.NoError(t, s.LedgerReceiptInsertMany(ctx, []store.LedgerReceipt{{TransactionID: r.TransactionID, ResultValid: true}}),
			"a transaction keeps its first receipt")
		got, err := s.LedgerReceiptGet(ctx, r.TransactionID)
		require.NoError(t, err)
		require.NotZero(t, got.ID)
		r.ID = got.ID
		require.Equal(t, r, got)
		_, err = s.LedgerReceiptGet(ctx, randomHex(64))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("AnchorPendingTransitionsHappenOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var seqs []int64
		for i := range 3 {
			b, err := s.LedgerBatchGet(ctx, ledgerBatch(t, s, fmt.Sprintf("%d.QmPend", i+1)))
			require.NoError(t, err)
			seqs = append(seqs, b.AnchorSeq)
		}
		done, err := s.AnchorCompletePending(ctx, seqs[0])
		require.NoError(t, err)
		require.Equal(t, store.AnchorCompleted, done.Status)
		require.NotNil(t, done.CompletedAt)
		_, err = s.AnchorCompletePending(ctx, seqs[0])
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.AnchorFailPending(ctx, store.AnchorFailParams{Seq: seqs[0], Reason: "late"})
		require.ErrorIs(t, err, store.ErrNotFound, "a completed anchor does not fail")

		failed, err := s.AnchorFailPending(ctx, store.AnchorFailParams{Seq: seqs[1], Reason: "ledger: INVALID: refused"})
		require.NoError(t, err)
		require.Equal(t, store.AnchorFailed, failed.Status)
		require.Equal(t, "ledger: INVALID: refused", failed.Error)
		require.Nil(t, failed.CompletedAt)
		_, err = s.AnchorFailPending(ctx, store.AnchorFailParams{Seq: seqs[1], Reason: "again"})
		require.ErrorIs(t, err, store.ErrNotFound, "an anchor fails once, so its operations are requeued once")
		_, err = s.AnchorCompletePending(ctx, seqs[1])
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.AnchorCompletePending(ctx, seqs[2]+100)
		require.ErrorIs(t, err, store.ErrNotFound)

		// Only the completed one is observed.
		a, err := s.AnchorNextToObserve(ctx)
		require.NoError(t, err)
		require.Equal(t, seqs[0], a.Seq)
		require.NoError(t, s.AnchorMarkObserved(ctx, a.Seq))
		_, err = s.AnchorNextToObserve(ctx)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
