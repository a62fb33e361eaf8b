package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/mempubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// flakyCAS fails every put while failing is set.
type flakyCAS struct {
	*cas.Store
	failing atomic.Bool
}

func (f *flakyCAS) PutAddressed(ctx context.Context, cid string, data []byte) error {
	if f.failing.Load() {
		return errors.New("cas unavailable")
	}
	return f.Store.PutAddressed(ctx, cid, data)
}

func (f *flakyCAS) PutAddressedTx(ctx context.Context, tx store.Executor, cid string, data []byte) error {
	if f.failing.Load() {
		return errors.New("cas unavailable")
	}
	return f.Store.PutAddressedTx(ctx, tx, cid, data)
}

type testBundle struct {
	st     store.Store
	q      *opqueue.Queue
	cas    *flakyCAS
	w      *Writer
	wallet *wallet.Wallet
	cancel context.CancelFunc
	done   chan error
}

var testRedelivery = pubsub.RedeliveryConfig{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}

// setup builds a writer over an embedded queue.
func setup(t *testing.T, st store.Store, mutate ...func(*Config)) *testBundle {
	t.Helper()
	q, err := opqueue.New(opqueue.Config{InstanceID: "i", Redelivery: testRedelivery, Logger: anchordtest.Logger(t)}, st)
	require.NoError(t, err)
	return setupWith(t, st, q, anchor.Config{}, mutate...)
}

// setupCluster builds the writer of cluster instance id over a cluster queue, where second
// copies of operations can arrive. Its broker is not run: nothing is consumed here.
func setupCluster(t *testing.T, st store.Store, id string, ac anchor.Config, mutate ...func(*Config)) *testBundle {
	t.Helper()
	ps, err := mempubsub.New(mempubsub.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ps.Close() })
	broker, err := opqueue.NewCluster(opqueue.Config{InstanceID: id, Redelivery: testRedelivery, Logger: anchordtest.Logger(t)}, opqueue.BrokerConfig{}, st, ps)
	require.NoError(t, err)
	require.NoError(t, broker.Register(context.Background()))
	return setupWith(t, st, broker.Queue(), ac, mutate...)
}

func setupWith(t *testing.T, st store.Store, q *opqueue.Queue, ac anchor.Config, mutate ...func(*Config)) *testBundle {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{st: st, wallet: wallet.New(wallet.Config{}), q: q}
	cs, err := cas.NewStore(cas.StoreConfig{}, st)
	require.NoError(t, err)
	b.cas = &flakyCAS{Store: cs}
	key, err := anchor.LoadOrCreateDomainKey(ctx, st)
	require.NoError(t, err)
	aw, err := anchor.NewWriter(ac, anchor.NewLocal(key))
	require.NoError(t, err)
	cfg := Config{Timeout: 50 * time.Millisecond, Profile: sidetree.DefaultProfile(), Logger: anchordtest.Logger(t)}
	for _, m := range mutate {
		m(&cfg)
	}
	w, err := New(cfg, q, b.cas, aw, st)
	require.NoError(t, err)
	w.signal.Init(t)
	b.w = w

	qctx, qcancel := context.WithCancel(ctx)
	qdone := make(chan error, 1)
	go func() { qdone <- q.Run(qctx) }()
	t.Cleanup(func() { qcancel(); <-qdone })
	return b
}

func (b *testBundle) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.done = make(chan error, 1)
	go func() { b.done <- b.w.Run(ctx) }()
	t.Cleanup(func() { b.stop(t) })
}

func (b *testBundle) stop(t *testing.T) {
	if b.cancel == nil {
		return
	}
	b.cancel()
	require.NoError(t, <-b.done)
	b.cancel = nil
}

// addCreates queues n valid creates and returns their suffixes.
func (b *testBundle) addCreates(t *testing.T, n int) []string {
	t.Helper()
	var suffixes []string
	for range n {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
		require.NoError(t, err)
		require.NoError(t, b.q.Add(context.Background(), opqueue.NewOp{Suffix: id.Suffix, Type: "create", Request: op.Request, Parsed: op}))
		suffixes = append(suffixes, id.Suffix)
	}
	return suffixes
}

// anchoredSuffixes reads the batch of a back from CAS, as any Sidetree node would.
func (b *testBundle) anchoredSuffixes(t *testing.T, a store.Anchor) []string {
	t.Helper()
	batch, err := batchfile.Read(sidetree.DefaultProfile(), a.AnchorString, b.cas.FetchFunc(context.Background()), batchfile.Limits{})
	require.NoError(t, err)
	require.NoError(t, batch.ProvisionalErr)
	var out []string
	for _, op := range batch.Operations {
		out = append(out, op.Suffix)
	}
	return out
}

func TestCutByAgeAnchorsAndAcks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		suffixes := b.addCreates(t, 3)
		b.run(t)
		res := b.w.signal.WaitOrTimeout(t, 10*time.Second)
		require.Equal(t, "age", res.Reason)
		require.Equal(t, 3, res.Operations)
		require.Equal(t, store.AnchorCompleted, res.Anchor.Status)
		require.NoError(t, anchor.VerifyLocal(res.Anchor))
		require.ElementsMatch(t, suffixes, b.anchoredSuffixes(t, res.Anchor))
		require.Zero(t, b.q.Backlog())
		rows, err := st.OpQueueList(context.Background(), store.OpQueueListParams{InstanceID: "i", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, rows, "acked in the anchor's transaction")
		require.Equal(t, 1.0, testutil.ToFloat64(b.w.m.batches.WithLabelValues("age")))
	})
}

func TestCutBySize(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st, func(c *Config) { c.MaxOperationCount = 5; c.Timeout = time.Hour })
	b.addCreates(t, 12)
	b.run(t)
	for range 2 {
		res := b.w.signal.WaitOrTimeout(t, 10*time.Second)
		require.Equal(t, "size", res.Reason)
		require.Equal(t, 5, res.Operations)
	}
	require.Equal(t, 2, b.q.Len(), "two wait for more or for the timeout")
	b.stop(t) // the flush anchors them
	res := b.w.signal.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, "flush", res.Reason)
	require.Equal(t, 2, res.Operations)
	require.Zero(t, b.q.Backlog())
}

func TestOneOperationPerDIDPerBatch(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	id, _, err := b.wallet.Create()
	require.NoError(t, err)
	// Two operations for one DID (cluster mode can queue them through two instances): the
	// second waits for the next batch.
	next := *id
	update, err := b.wallet.Update(&next)
	require.NoError(t, err)
	recoverReq, err := b.wallet.Recover(id)
	require.NoError(t, err)
	for _, req := range [][]byte{update, recoverReq} {
		op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
		require.NoError(t, err)
		require.NoError(t, b.q.Add(ctx, opqueue.NewOp{Suffix: op.Suffix, Type: string(op.Type), Request: op.Request, Parsed: op}))
	}
	b.run(t)
	first := b.w.signal.WaitOrTimeout(t, 10*time.Second)
	second := b.w.signal.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, 1, first.Operations)
	require.Equal(t, 1, second.Operations)
	require.NotEqual(t, first.Anchor.Seq, second.Anchor.Seq)
}

func TestSecondCopyOfAnAnchoredOperationIsNotAnchoredAgain(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setupCluster(t, st, "i", anchor.Config{})
		ctx := context.Background()
		_, req, err := b.wallet.Create()
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
		require.NoError(t, err)
		add := func() {
			require.NoError(t, b.q.Add(ctx, opqueue.NewOp{Suffix: op.Suffix, Type: "create", Request: op.Request}))
		}
		add()
		res, err := b.w.runOnce(ctx, "age")
		require.NoError(t, err)
		require.Equal(t, 1, res.Operations)
		// The same operation arrives again (a redelivered or reposted message).
		add()
		res, err = b.w.runOnce(ctx, "age")
		require.NoError(t, err)
		require.Zero(t, res.Operations)
		require.Zero(t, b.q.Backlog())
		anchors, err := st.AnchorList(ctx, store.AnchorListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, anchors, 1)
	})
}

func TestCASFailureNacksAndRetries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.cas.failing.Store(true)
		suffixes := b.addCreates(t, 2)
		res, err := b.w.runOnce(context.Background(), "age")
		require.ErrorContains(t, err, "cas unavailable")
		require.Zero(t, res.Operations)
		rows, err := st.OpQueueList(context.Background(), store.OpQueueListParams{InstanceID: "i", Limit: 10})
		require.NoError(t, err)
		require.Len(t, rows, 2, "still queued")
		require.Equal(t, 1, rows[0].Attempts)
		require.Contains(t, rows[0].History[0], "cas unavailable")

		b.cas.failing.Store(false)
		b.run(t)
		res = b.w.signal.WaitOrTimeout(t, 10*time.Second)
		require.ElementsMatch(t, suffixes, b.anchoredSuffixes(t, res.Anchor))
	})
}

func TestRepeatedFailureParksOperations(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	b.cas.failing.Store(true)
	b.addCreates(t, 1)
	ctx := context.Background()
	for attempt := range 3 {
		anchordtest.Eventually(t, 5*time.Second, time.Millisecond, func() bool { return b.q.Status(time.Now()).Available == 1 })
		_, err := b.w.runOnce(ctx, "age")
		require.Error(t, err, "attempt %d", attempt+1)
	}
	dl, err := st.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	require.Equal(t, 3, dl[0].Attempts)
	require.Zero(t, b.q.Backlog())
}

func TestUnparsableOperationIsParked(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	good := b.addCreates(t, 1)
	// A row whose request no longer passes validation (say, the profile changed between runs).
	require.NoError(t, b.q.Add(ctx, opqueue.NewOp{Suffix: "EiBad", Type: "create", Request: []byte(`{"type":"create"}`)}))
	res, err := b.w.runOnce(ctx, "age")
	require.NoError(t, err)
	require.Equal(t, 1, res.Operations)
	require.Equal(t, good, b.anchoredSuffixes(t, res.Anchor))
	dl, err := st.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	require.Contains(t, dl[0].Reason, "invalid operation")
}

func TestBatchOverAFileCapIsCutSmaller(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	// A core index file cap that holds only some creates (each suffixData is ~150 bytes, and
	// random hashes do not compress).
	b := setup(t, st, func(c *Config) { c.Limits.MaxCoreIndexFileSize = 1500; c.Timeout = time.Hour })
	suffixes := b.addCreates(t, 40)
	ctx := context.Background()
	var anchored []string
	for b.q.Backlog() > 0 {
		res, err := b.w.runOnce(ctx, "age")
		require.NoError(t, err)
		require.Less(t, res.Operations, 40)
		require.Positive(t, res.Operations)
		anchored = append(anchored, b.anchoredSuffixes(t, res.Anchor)...)
	}
	require.ElementsMatch(t, suffixes, anchored, "every operation anchored once across the smaller batches")
	require.Positive(t, testutil.ToFloat64(b.w.m.shrunk.WithLabelValues(string(batchfile.CoreIndex))))
}

func TestWaitFollowsOldestOperation(t *testing.T) {
	t.Parallel()
	w := &Writer{cfg: Config{MaxOperationCount: 10, Timeout: 2 * time.Second}}
	now := time.Now()
	require.Equal(t, "", w.due(opqueue.Status{}, now))
	require.Equal(t, time.Minute, w.wait(opqueue.Status{}, now))
	st := opqueue.Status{Available: 3, Oldest: now.Add(-1500 * time.Millisecond)}
	require.Equal(t, "", w.due(st, now))
	require.Equal(t, 500*time.Millisecond, w.wait(st, now), "wakes when the oldest turns 2 s old")
	st.Oldest = now.Add(-2 * time.Second)
	require.Equal(t, "age", w.due(st, now))
	require.Equal(t, "size", w.due(opqueue.Status{Available: 10, Oldest: now}, now))
	st = opqueue.Status{NextAvailable: now.Add(300 * time.Millisecond)}
	require.Equal(t, 300*time.Millisecond, w.wait(st, now), "wakes when a backoff ends")
	require.Equal(t, fmt.Sprint(time.Millisecond), fmt.Sprint(w.wait(opqueue.Status{Available: 1, Oldest: now.Add(-time.Hour)}, now)))
}

func TestParkedOperationDoesNotHoldBackTheBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		suffixes := b.addCreates(t, 3)
		// The expiry task parks one queued operation while this instance holds it in memory.
		rows, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "i", Limit: 10})
		require.NoError(t, err)
		_, err = st.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: []int64{rows[1].ID}, InstanceID: "i"})
		require.NoError(t, err)

		_, err = b.w.runOnce(ctx, "age")
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.Equal(t, 2, b.q.Len(), "the other two are back")
		back, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "i", Limit: 10})
		require.NoError(t, err)
		require.Len(t, back, 2)
		for _, r := range back {
			require.Zero(t, r.Attempts, "not penalised for another operation's fate")
		}
		res, err := b.w.runOnce(ctx, "age")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{suffixes[0], suffixes[2]}, b.anchoredSuffixes(t, res.Anchor))
		left, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "i", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, left)
	})
}

// TestWholeSecondsAcrossTwoWriters: two cluster instances cut batches from one database as
// fast as they can, under the did:orb profile's rule. Their anchors, in sequence order, fall in
// increasing whole seconds, none ahead of its transaction by more than the race for a second
// explains: the writers wait for the next second instead of running ahead of the clock.
func TestWholeSecondsAcrossTwoWriters(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		const perWriter = 4
		var writers []*testBundle
		for _, id := range []string{"i", "j"} {
			b := setupCluster(t, st, id, anchor.Config{WholeSeconds: true, Logger: anchordtest.Logger(t)}, func(c *Config) { c.MaxOperationCount = 2 })
			b.addCreates(t, 2*perWriter)
			writers = append(writers, b)
		}
		for _, b := range writers {
			b.run(t)
		}
		ctx := context.Background()
		var anchors []store.Anchor
		anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
			var err error
			anchors, err = st.AnchorList(ctx, store.AnchorListParams{Limit: 100})
			require.NoError(t, err)
			return len(anchors) == 2*perWriter
		}, "both writers anchored their batches")
		for _, b := range writers {
			b.stop(t)
		}
		var prev time.Time
		for _, a := range anchors {
			var rec anchor.Record
			require.NoError(t, json.Unmarshal(a.Record, &rec))
			require.Greater(t, rec.Time.Truncate(time.Second), prev.Truncate(time.Second), "anchor %d at %s after %s", a.Seq, rec.Time, prev)
			require.Less(t, rec.Time.Sub(a.CreatedAt), 2*time.Second, "anchor %d at %s, written at %s", a.Seq, rec.Time, a.CreatedAt)
			prev = rec.Time
		}
		waited := 0
		for _, b := range writers {
			waited += int(anchordtest.SampleCount(t, b.w.m.paced))
			require.Positive(t, testutil.ToFloat64(b.w.m.batches.WithLabelValues("size")), "each writer cut batches")
		}
		require.Positive(t, waited, "the writers waited for the next second")
	})
}
