package submitter

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestSubmitterAccepted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		as := b.anchors(t, 5)
		s := b.submitter(t, "s1", nil, func(c *Config) { c.ClaimLimit = 3 })

		res, err := s.runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 3, Accepted: 3}, res)
		res, err = s.runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 2, Accepted: 2}, res)
		res, err = s.runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{}, res)

		for _, a := range as {
			batch := b.batchOf(t, a)
			require.True(t, batch.Submitted)
			require.Equal(t, store.LedgerStatusPending, batch.DLTStatus)
			require.Empty(t, batch.SubmissionError)
			require.Empty(t, batch.ClaimOwner)
			require.Equal(t, 1, batch.Attempts)
			require.Equal(t, store.AnchorPending, b.anchor(t, a.Seq).Status, "pending until the ledger commits")
		}
		stats := b.ledger.Stats()
		require.Equal(t, 5, stats.Accepted)
		require.Equal(t, 5, stats.Submissions)
		require.Zero(t, stats.Duplicates)
		require.Equal(t, store.LedgerBatchCounts{Unsettled: 5}, b.counts(t))
	})
}

func TestSubmitterRejected(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{BadRequest: 1}}, 2*time.Second)
		// A 404 comes from a ledger URL with a wrong path: the same devledger, a route it lacks.
		wrong, err := sawtooth.New(sawtooth.Config{URL: b.ledger.URL + "/no-such-api", Timeout: 2 * time.Second})
		require.NoError(t, err)
		as := b.anchors(t, 2)

		res, err := b.submitter(t, "s1", nil, func(c *Config) { c.ClaimLimit = 1 }).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 1, Rejected: 1}, res)
		res, err = b.submitter(t, "s2", wrong, nil).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 1, Rejected: 1}, res)

		bad, missing := b.batchOf(t, as[0]), b.batchOf(t, as[1])
		require.True(t, bad.Submitted)
		require.Equal(t, store.LedgerErrorBadRequest, bad.SubmissionError)
		require.Contains(t, bad.SubmissionErrorMessage, "Submitted Batches Invalid")
		require.Contains(t, bad.SubmissionErrorMessage, "injected fault")
		require.Empty(t, bad.DLTStatus)
		require.Len(t, bad.History, 1)
		require.Contains(t, bad.History[0], "attempt 1: rejected 400 code 30")
		require.Equal(t, store.LedgerErrorNotFound, missing.SubmissionError)
		require.Contains(t, missing.SubmissionErrorMessage, "404")

		// Both anchors failed and their operations went back to the queue, once each.
		for _, a := range as {
			got := b.anchor(t, a.Seq)
			require.Equal(t, store.AnchorFailed, got.Status)
			require.Contains(t, got.Error, "the ledger rejected batch")
			require.True(t, requeued(t, st, a.Seq))
		}
		require.Len(t, b.requeue.anchors, 2)
		require.Equal(t, store.AnchorFailed, b.requeue.anchors[0].Status, "RequeueFunc gets the failed anchor")
		require.Equal(t, store.LedgerBatchCounts{Failed: 2}, b.counts(t))
		require.Zero(t, b.ledger.Stats().Accepted)
	})
}

func TestSubmitterRetryAnswersRelinquishWithBackoff(t *testing.T) {
	t.Parallel()
	for name, faults := range map[string]devledger.FaultConfig{
		"503": {Unavailable: 1},
		"429": {TooManyRequests: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, func(t *testing.T, st store.Store) {
				b := setup(t, st, devledger.Config{Faults: faults}, 2*time.Second)
				a := b.anchors(t, 1)[0]
				s := b.submitter(t, "s1", nil, func(c *Config) { c.BackoffInitial, c.BackoffMax = time.Hour, time.Hour })
				res, err := s.runOnce(t.Context())
				require.NoError(t, err)
				require.Equal(t, SubmitResult{Claimed: 1, Retried: 1}, res)

				batch := b.batchOf(t, a)
				require.False(t, batch.Submitted)
				require.Empty(t, batch.ClaimOwner)
				require.Equal(t, 1, batch.Attempts)
				require.False(t, batch.MaybeSubmitted, "a plain "+name+" means the ledger did not take it")
				require.Len(t, batch.History, 1)
				require.Contains(t, batch.History[0], "attempt 1: retry "+name)
				now, err := st.Now(t.Context())
				require.NoError(t, err)
				require.WithinDuration(t, now.Add(time.Hour), batch.NextAttemptAt, 10*time.Minute, "backoff from the database clock")

				res, err = s.runOnce(t.Context())
				require.NoError(t, err)
				require.Zero(t, res.Claimed, "not due again before its backoff")
				require.Equal(t, store.AnchorPending, b.anchor(t, a.Seq).Status)
			})
		})
	}
}

func TestSubmitterNoAnswerChecksStatusFirst(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		// The ledger records the batch and then hangs until the client gives up.
		b := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{Timeout: 1}}, time.Second)
		a := b.anchors(t, 1)[0]
		res, err := b.submitter(t, "s1", nil, nil).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 1, Accepted: 1}, res, "the status check found the batch")

		batch := b.batchOf(t, a)
		require.True(t, batch.Submitted)
		require.Equal(t, 1, batch.Attempts)
		require.Len(t, batch.History, 1)
		require.Contains(t, batch.History[0], "timeout after 1s")
		require.Contains(t, batch.History[0], "the ledger holds the batch (PENDING)")
		stats := b.ledger.Stats()
		require.Equal(t, 1, stats.Submissions, "not sent twice")
		require.Zero(t, stats.Duplicates)
	})
}

func TestSubmitterConnectionRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		down, err := sawtooth.New(sawtooth.Config{URL: "http://" + anchordtest.FreeAddr(t), Timeout: 2 * time.Second})
		require.NoError(t, err)
		a := b.anchors(t, 1)[0]
		res, err := b.submitter(t, "s1", down, nil).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 1, Retried: 1}, res)
		batch := b.batchOf(t, a)
		require.False(t, batch.MaybeSubmitted, "a refused connection carried nothing")
		require.Contains(t, batch.History[0], "connection refused")
	})
}

func TestSubmitterTakeoverAsksTheLedgerFirst(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		as := b.anchors(t, 2)
		// A submitter claims both, sends the first, and dies before recording anything: its
		// claims expire.
		claimed, err := st.LedgerBatchClaim(t.Context(), store.LedgerBatchClaimParams{Owner: "dead", Limit: 2, TTL: 100 * time.Millisecond})
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		sent := b.batchOf(t, as[0])
		require.Equal(t, ledger.Accepted, b.client.Submit(t.Context(), sent.SerializedBatch, "").Class)

		s := b.submitter(t, "s1", nil, nil)
		var res SubmitResult
		anchordtest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
			r, err := s.runOnce(t.Context())
			require.NoError(t, err)
			res = r
			return r.Claimed > 0
		}, "expired claims taken over")
		require.Equal(t, SubmitResult{Claimed: 2, Held: 1, Accepted: 1}, res)

		held := b.batchOf(t, as[0])
		require.True(t, held.Submitted)
		require.Equal(t, 1, held.Attempts, "the lost claim counts; the check is no attempt")
		require.Contains(t, held.History[0], "claim of dead (term 1) expired")
		require.Contains(t, held.History[1], "the ledger holds the batch (PENDING); not sent again")
		other := b.batchOf(t, as[1])
		require.True(t, other.Submitted)
		require.Equal(t, 2, other.Attempts)
		stats := b.ledger.Stats()
		require.Equal(t, 2, stats.Accepted)
		require.Equal(t, 2, stats.Submissions, "the batch the dead submitter sent was not sent again")
		require.Zero(t, stats.Duplicates)
	})
}

func TestSubmitterParksAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{Unavailable: 1}}, 2*time.Second)
		a := b.anchors(t, 1)[0]
		s := b.submitter(t, "s1", nil, func(c *Config) {
			c.MaxAttempts, c.BackoffInitial, c.BackoffMax = 3, time.Millisecond, time.Millisecond
		})
		var total SubmitResult
		anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
			r, err := s.runOnce(t.Context())
			require.NoError(t, err)
			total.Claimed += r.Claimed
			total.Retried += r.Retried
			total.Parked += r.Parked
			return r.Parked > 0
		}, "batch parked")
		require.Equal(t, SubmitResult{Claimed: 3, Retried: 2, Parked: 1}, total)

		batch := b.batchOf(t, a)
		require.True(t, batch.Submitted)
		require.Equal(t, store.LedgerErrorParked, batch.SubmissionError)
		require.Contains(t, batch.SubmissionErrorMessage, "gave up after 3 attempts")
		require.Equal(t, 3, batch.Attempts)
		require.Empty(t, batch.ClaimOwner)

		dls, err := st.DeadLetterList(t.Context(), store.DeadLetterListParams{Kind: store.DeadLetterLedgerBatch, Limit: 10})
		require.NoError(t, err)
		require.Len(t, dls, 1)
		dl := dls[0]
		require.Equal(t, batch.HeaderSignature, dl.Ref)
		require.Equal(t, 3, dl.Attempts)
		require.Equal(t, batch.SubmissionErrorMessage, dl.Reason)
		require.Len(t, dl.History, 3, "every attempt, the last one as the park line")
		for _, h := range dl.History {
			require.Contains(t, h, "retry 503 code 18")
		}
		require.True(t, strings.Contains(dl.History[2], "parked: gave up"))
		var p ParkedBatch
		require.NoError(t, json.Unmarshal(dl.Payload, &p))
		require.Equal(t, ParkedBatch{BatchID: batch.HeaderSignature, AnchorSeq: a.Seq, Anchor: a.AnchorString,
			SerializedBatch: p.SerializedBatch}, p)
		require.NotEmpty(t, p.SerializedBatch)

		require.Equal(t, store.AnchorFailed, b.anchor(t, a.Seq).Status)
		require.True(t, requeued(t, st, a.Seq))
		require.Equal(t, store.LedgerBatchCounts{Failed: 1}, b.counts(t))
		res, err := s.runOnce(t.Context())
		require.NoError(t, err)
		require.Zero(t, res.Claimed, "a parked batch is never claimed again")
	})
}

// pausedClient delegates to a ledger client, but holds every Submit until the test releases
// it, ignoring the caller's deadline: a submitter process that stopped (GC pause, SIGSTOP)
// while its claim expired.
type pausedClient struct {
	ledger.Client
	entered chan struct{}
	release chan struct{}
}

func (p *pausedClient) Submit(ctx context.Context, batchList []byte, serviceID string) ledger.Result {
	p.entered <- struct{}{}
	<-p.release
	return p.Client.Submit(context.WithoutCancel(ctx), batchList, serviceID)
}

func TestSubmitterWithExpiredClaimCannotOverwrite(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		a := b.anchors(t, 1)[0]
		paused := &pausedClient{Client: b.client, entered: make(chan struct{}, 1), release: make(chan struct{})}
		slow := b.submitter(t, "slow", paused, func(c *Config) { c.ClaimTTL, c.RequestTimeout = time.Second, 500*time.Millisecond })
		fast := b.submitter(t, "fast", nil, nil)

		done := make(chan SubmitResult, 1)
		go func() {
			res, err := slow.runOnce(context.Background())
			if err != nil {
				t.Errorf("slow round: %v", err)
			}
			done <- res
		}()
		anchordtest.WaitOrTimeout(t, paused.entered, 10*time.Second)
		// While the slow submitter is stopped its claim expires and the fast one takes the
		// batch over, asks the ledger (UNKNOWN: nothing arrived yet) and submits it.
		var res SubmitResult
		anchordtest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
			r, err := fast.runOnce(t.Context())
			require.NoError(t, err)
			res = r
			return r.Claimed > 0
		}, "expired claim taken over")
		require.Equal(t, SubmitResult{Claimed: 1, Accepted: 1}, res)

		// The slow submitter wakes up, its request goes through (the ledger already holds
		// the batch), and its late write is fenced off.
		close(paused.release)
		require.Equal(t, SubmitResult{Claimed: 1, Fenced: 1}, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
		batch := b.batchOf(t, a)
		require.True(t, batch.Submitted)
		require.Equal(t, int64(2), batch.ClaimTerm)
		require.Equal(t, 2, batch.Attempts, "the expired claim and the fast submission")
		require.Equal(t, 1, b.ledger.Stats().Duplicates, "the stopped process's request still reached the ledger")
	})
}

func TestSubmitterRunDrainsTheBacklog(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		b.anchors(t, 20)
		s := b.submitter(t, "s1", nil, func(c *Config) { c.ClaimLimit = 7 })
		s.testSignals.round.Init(t)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- s.Run(ctx) }()
		accepted := 0
		for accepted < 20 {
			// A hang guard, not a speed check: a round is a claim, a ledger request and a
			// commit, each of which a machine with a saturated disk can take seconds over.
			accepted += s.testSignals.round.WaitOrTimeout(t, time.Minute).Accepted
		}
		cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, errc, 10*time.Second))
		require.Equal(t, store.LedgerBatchCounts{Unsettled: 20}, b.counts(t))
	})
}

func TestSubmitterShutdownRelinquishesClaims(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		// The ledger takes the batch and hangs; the submitter is told to stop meanwhile.
		b := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{Timeout: 1}}, 30*time.Second)
		a := b.anchors(t, 1)[0]
		s := b.submitter(t, "s1", nil, func(c *Config) { c.ClaimTTL, c.RequestTimeout = time.Minute, 20*time.Second })
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- s.Run(ctx) }()
		anchordtest.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
			return b.ledger.Stats().Submissions > 0
		}, "batch sent")
		cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, errc, 10*time.Second))

		batch := b.batchOf(t, a)
		require.False(t, batch.Submitted)
		require.Empty(t, batch.ClaimOwner, "relinquished, not left to expire")
		require.Zero(t, batch.Attempts, "a shutdown is not the batch's fault")
		require.True(t, batch.MaybeSubmitted, "the next claimer asks the ledger first")
		require.Contains(t, batch.History[0], "request abandoned")
		res, err := b.submitter(t, "s2", nil, nil).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 1, Held: 1}, res, "due at once, and not sent twice")
		require.Equal(t, 1, b.ledger.Stats().Submissions)
	})
}
