package submitter

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledger/splinter"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// submitAll submits every unsubmitted batch with one submitter round.
func (b *testBundle) submitAll(t *testing.T, want int) {
	t.Helper()
	res, err := b.submitter(t, "s", nil, func(c *Config) { c.ClaimLimit = 1000 }).runOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, SubmitResult{Claimed: want, Accepted: want}, res)
}

func TestPollerCommittedCompletesTheAnchor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		as := b.anchors(t, 3)
		b.submitAll(t, 3)
		log := &anchordtest.SyncBuffer{}
		p := b.poller(t, nil, func(c *PollerConfig) { c.Logger = slog.New(slog.NewTextHandler(log, nil)) })

		res, err := p.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 3, Pending: 3}, res)
		require.NotContains(t, log.String(), "anchor committed")

		b.ledger.Clock.Advance(time.Minute)
		res, err = p.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 3, Committed: 3}, res)
		for _, a := range as {
			require.Contains(t, log.String(), fmt.Sprintf(`msg="anchor committed on the ledger" anchor_seq=%d`, a.Seq), "an operator sees each commit")
			got := b.anchor(t, a.Seq)
			require.Equal(t, store.AnchorCompleted, got.Status)
			require.NotNil(t, got.CompletedAt)
			batch := b.batchOf(t, a)
			require.Equal(t, store.LedgerStatusCommitted, batch.DLTStatus)
			txns, err := st.LedgerTransactionList(t.Context(), batch.HeaderSignature)
			require.NoError(t, err)
			r, err := st.LedgerReceiptGet(t.Context(), txns[0].HeaderSignature)
			require.NoError(t, err)
			require.True(t, r.ResultValid)
			require.Equal(t, store.LedgerStatusCommitted, r.ExternalStatus)
		}
		// The observer takes completed anchors from here.
		next, err := st.AnchorNextToObserve(t.Context())
		require.NoError(t, err)
		require.Equal(t, as[0].Seq, next.Seq)
		require.Equal(t, store.LedgerBatchCounts{Committed: 3}, b.counts(t))

		res, err = p.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{}, res, "final statuses are not polled again")
		require.Empty(t, b.requeue.anchors)
	})
}

func TestPollerInvalidFailsTheAnchorAndRequeues(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{Invalid: 1}}, 2*time.Second)
		a := b.anchors(t, 1)[0]
		b.submitAll(t, 1)
		b.ledger.Clock.Advance(time.Minute)
		p := b.poller(t, nil, nil)
		res, err := p.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 1, Invalid: 1}, res)

		got := b.anchor(t, a.Seq)
		require.Equal(t, store.AnchorFailed, got.Status)
		require.Contains(t, got.Error, "INVALID: injected fault: transaction refused by the processor")
		require.True(t, requeued(t, st, a.Seq), "operations given back in the failing transaction")
		require.Len(t, b.requeue.anchors, 1)
		require.Equal(t, a.Seq, b.requeue.anchors[0].Seq)
		require.Equal(t, a.AnchorString, b.requeue.anchors[0].AnchorString)

		batch := b.batchOf(t, a)
		require.Equal(t, store.LedgerStatusInvalid, batch.DLTStatus)
		txns, err := st.LedgerTransactionList(t.Context(), batch.HeaderSignature)
		require.NoError(t, err)
		r, err := st.LedgerReceiptGet(t.Context(), txns[0].HeaderSignature)
		require.NoError(t, err)
		require.False(t, r.ResultValid)
		require.Contains(t, r.ErrorMessage, "injected fault")

		res, err = p.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{}, res)
		require.Len(t, b.requeue.anchors, 1, "requeued once")
		_, err = st.AnchorNextToObserve(t.Context())
		require.ErrorIs(t, err, store.ErrNotFound, "a failed anchor is never observed")
	})
}

func TestPollerResubmitsABatchTheLedgerLost(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		// The first ledger answers 202 and forgets the batch.
		b := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{Lost: 1}}, 2*time.Second)
		a := b.anchors(t, 1)[0]
		b.submitAll(t, 1)
		sent := b.batchOf(t, a)

		// Within the grace period UNKNOWN is recorded and nothing else happens.
		res, err := b.poller(t, nil, func(c *PollerConfig) { c.UnknownGrace = time.Hour }).RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 1, Unknown: 1}, res)
		require.Equal(t, store.LedgerStatusUnknown, b.batchOf(t, a).DLTStatus)

		// Past it, the ledger is asked once more, and the batch goes back to the submitters.
		before := len(b.ledger.Requests())
		res, err = b.poller(t, nil, func(c *PollerConfig) { c.UnknownGrace = time.Nanosecond }).RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 1, Resubmitted: 1}, res)
		asked := 0
		for _, r := range b.ledger.Requests()[before:] {
			if r.Path == "/batch_statuses" {
				asked++
			}
		}
		require.Equal(t, 2, asked, "checked, then re-checked")
		lost := b.batchOf(t, a)
		require.False(t, lost.Submitted)
		require.Empty(t, lost.DLTStatus)
		require.Nil(t, lost.SubmittedAt)
		require.Contains(t, lost.History[len(lost.History)-1], "the ledger lost the batch: UNKNOWN twice")
		require.Equal(t, store.AnchorPending, b.anchor(t, a.Seq).Status, "the anchor still waits")

		// A submitter sends the same signed bytes again, here to a ledger that keeps them.
		good := devledgertest.Start(t, devledger.Config{})
		goodClient, err := sawtooth.New(sawtooth.Config{URL: good.URL, Timeout: 2 * time.Second})
		require.NoError(t, err)
		sres, err := b.submitter(t, "s2", goodClient, nil).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 1, Accepted: 1}, sres)
		again := b.batchOf(t, a)
		require.Equal(t, sent.SerializedBatch, again.SerializedBatch)
		require.Equal(t, 2, again.Attempts)
		good.Clock.Advance(time.Minute)
		res, err = b.poller(t, goodClient, nil).RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 1, Committed: 1}, res)
		require.Equal(t, store.AnchorCompleted, b.anchor(t, a.Seq).Status)
		require.Equal(t, 1, good.Stats().Committed)
	})
}

func TestPollerLedgerDownChangesNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		b.anchors(t, 2)
		b.submitAll(t, 2)
		down, err := sawtooth.New(sawtooth.Config{URL: "http://" + anchordtest.FreeAddr(t), Timeout: time.Second})
		require.NoError(t, err)
		res, err := b.poller(t, down, nil).RunOnce(t.Context())
		require.NoError(t, err, "a ledger outage is not a poll failure")
		require.Equal(t, PollResult{Errors: 2}, res)
		require.Equal(t, store.LedgerBatchCounts{Unsettled: 2}, b.counts(t))
	})
}

func TestPollerAsksPerServiceID(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		l := devledgertest.Start(t, devledger.Config{})
		client, err := splinter.New(splinter.Config{URL: l.URL, Timeout: 2 * time.Second})
		require.NoError(t, err)
		b := &testBundle{st: st, ledger: l, requeue: &requeueRecorder{}}
		key, err := anchor.LoadOrCreateLedgerKey(t.Context(), st)
		require.NoError(t, err)
		signer, err := sawtooth.NewSigner(key)
		require.NoError(t, err)
		builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
		require.NoError(t, err)
		var as []store.Anchor
		for _, svc := range []string{"circuit1::svc1", "circuit2::svc2"} {
			backend, err := anchor.NewLedger(builder, anchor.LedgerConfig{ServiceID: svc})
			require.NoError(t, err)
			w, err := anchor.NewWriter(anchor.Config{}, backend)
			require.NoError(t, err)
			as = append(as, writeAnchors(t, st, w, strings.ReplaceAll(svc, ":", ""), 3, 10)...)
		}
		res, err := b.submitter(t, "s", client, nil).runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, SubmitResult{Claimed: 6, Accepted: 6}, res)

		l.Clock.Advance(time.Minute)
		before := len(l.Requests())
		pres, err := b.poller(t, client, nil).RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, PollResult{Polled: 6, Committed: 6}, pres)
		var paths []string
		for _, r := range l.Requests()[before:] {
			paths = append(paths, r.Method+" "+r.Path)
		}
		require.ElementsMatch(t, []string{
			"GET /scabbard/circuit1/svc1/batch_statuses", "GET /scabbard/circuit2/svc2/batch_statuses",
		}, paths, "one request per service, each for its own batches")
		for _, a := range as {
			require.Equal(t, store.AnchorCompleted, b.anchor(t, a.Seq).Status)
		}
	})
}

func TestPollerPagesThroughEverything(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		b.anchors(t, 23)
		b.submitAll(t, 23)
		b.ledger.Clock.Advance(time.Minute)
		p := b.poller(t, nil, func(c *PollerConfig) { c.PageSize = 5 })
		p.testSignals.poll.Init(t)
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- p.Run(ctx) }()
		res := p.testSignals.poll.WaitOrTimeout(t, 10*time.Second)
		cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, errc, 10*time.Second))
		require.Equal(t, PollResult{Polled: 23, Committed: 23}, res, fmt.Sprintf("%+v", res))
		require.Equal(t, store.LedgerBatchCounts{Committed: 23}, b.counts(t))
	})
}
