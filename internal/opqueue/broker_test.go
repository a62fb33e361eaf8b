package opqueue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/mempubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// node is one instance of a test cluster: its queue and broker side.
type node struct {
	id     string
	q      *Queue
	b      *Broker
	ps     *countingPubSub
	cancel context.CancelFunc
	done   chan error
}

func startNode(t *testing.T, st store.Store, broker *mempubsub.Broker, id string, consume bool) *node {
	t.Helper()
	ps, err := mempubsub.New(mempubsub.Config{Broker: broker, Redelivery: pubsub.RedeliveryConfig{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond}})
	require.NoError(t, err)
	counting := &countingPubSub{PubSub: ps}
	b, err := NewCluster(
		Config{InstanceID: id, Redelivery: pubsub.RedeliveryConfig{MaxAttempts: 5, InitialInterval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond}, Logger: anchordtest.Logger(t)},
		BrokerConfig{PoolSize: 2, TaskMonitorInterval: 20 * time.Millisecond, Logger: anchordtest.Logger(t)}, st, counting)
	require.NoError(t, err)
	q := b.Queue()
	require.NoError(t, b.Register(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{id: id, q: q, b: b, ps: counting, cancel: cancel, done: make(chan error, 1)}
	go func() {
		var wg sync.WaitGroup
		wg.Go(func() { _ = q.Run(ctx) })
		wg.Go(func() { _ = b.Run(ctx) })
		var err error
		if consume {
			err = b.Consume(ctx)
		} else {
			<-ctx.Done()
		}
		wg.Wait()
		n.done <- err
	}()
	t.Cleanup(func() { n.stop(); _ = ps.Close() })
	return n
}

// countingPubSub counts the messages published to the operation topic.
type countingPubSub struct {
	pubsub.PubSub
	operationMessages atomic.Int64
}

func (c *countingPubSub) Publish(ctx context.Context, topic string, msgs ...*pubsub.Message) error {
	if topic == pubsub.TopicOperation {
		c.operationMessages.Add(int64(len(msgs)))
	}
	return c.PubSub.Publish(ctx, topic, msgs...)
}

func (n *node) published() int64 { return n.b.ps.(*countingPubSub).operationMessages.Load() }

func (n *node) stop() {
	if n.cancel != nil {
		n.cancel()
		<-n.done
		n.cancel = nil
	}
}

func opFor(i int) NewOp {
	return NewOp{Suffix: fmt.Sprintf("did-%03d", i), Type: "create", Request: []byte(fmt.Sprintf(`{"n":%d}`, i))}
}

func TestBrokerAddIsConsumedIntoTheQueue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		broker := mempubsub.NewBroker(pubsub.Topics...)
		a := startNode(t, st, broker, "a", false) // only publishes
		b := startNode(t, st, broker, "b", true)
		ctx := context.Background()
		for i := range 10 {
			require.NoError(t, a.b.Add(ctx, opFor(i)))
		}
		anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return b.q.Len() == 10 })
		require.Len(t, rows(t, st, "b"), 10, "stored as b's rows before the ack")
		require.Empty(t, rows(t, st, "a"))
		ids := map[string]bool{}
		for _, r := range rows(t, st, "b") {
			ids[r.OpID] = true
		}
		require.True(t, ids[OpIDOf(opFor(0).Request)], "rows keep the operation id")
	})
}

// TestConcurrentAddsShareMessages checks that the operations of concurrent Adds travel in
// fewer messages than operations, and that each one is stored exactly once.
func TestConcurrentAddsShareMessages(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	broker := mempubsub.NewBroker(pubsub.Topics...)
	a := startNode(t, st, broker, "a", false)
	b := startNode(t, st, broker, "b", true)
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- a.b.Add(context.Background(), opFor(i)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return b.q.Len() == n })
	got := map[string]int{}
	for _, r := range rows(t, st, "b") {
		got[r.OpID]++
	}
	require.Len(t, got, n)
	for i := range n {
		require.Equal(t, 1, got[OpIDOf(opFor(i).Request)])
	}
	require.Less(t, a.published(), int64(n), "concurrent operations share messages")
	t.Logf("%d operations in %d messages", n, a.published())
}

func TestChunksKeepMessagesBounded(t *testing.T) {
	t.Parallel()
	var ms []message
	for i := range 1000 {
		size := 100
		if i%7 == 0 {
			size = 40 << 10
		}
		ms = append(ms, message{OpID: fmt.Sprint(i), Request: []byte(strings.Repeat("x", size))})
	}
	ms = append(ms, message{OpID: "huge", Request: make([]byte, 2*groupMaxBytes)})
	var back []message
	for _, c := range chunks(ms) {
		require.NotEmpty(t, c)
		require.LessOrEqual(t, len(c), groupMaxOps)
		size := 0
		for _, m := range c {
			size += len(m.Request)
		}
		require.True(t, size <= groupMaxBytes || len(c) == 1, "a group over the byte bound holds one operation")
		back = append(back, c...)
	}
	require.Equal(t, ms, back, "every operation once, in order")
	require.Empty(t, chunks(nil))
}

func TestClusterNackKeepsTheOperationInTheDatabase(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.PostgresOpener(t))
	broker := mempubsub.NewBroker(pubsub.Topics...)
	a := startNode(t, st, broker, "a", true)
	ctx := context.Background()
	require.NoError(t, a.b.Add(ctx, opFor(1)))
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return a.q.Len() == 1 })
	published := a.ps.operationMessages.Load()

	batch := a.q.Remove(10)
	batch.Nack(ctx, fmt.Errorf("ledger unavailable"))
	require.Equal(t, published, a.ps.operationMessages.Load(), "nothing waits in the broker")
	require.Equal(t, 1, a.q.Backlog(), "a keeps the operation until its backoff ends")
	r := rows(t, st, "a")
	require.Len(t, r, 1)
	require.Equal(t, 1, r[0].Attempts)
	require.Contains(t, r[0].History[0], "ledger unavailable")
	require.True(t, r[0].AvailableAt.After(r[0].EnqueuedAt), "the delay is recorded in the row")

	// If a dies now, the op-queue monitor reposts the row, failure count included.
	a.stop()
	require.NoError(t, st.OpQueueTaskDelete(ctx, "a"))
	b := startNode(t, st, broker, "b", true)
	mon, err := NewMonitor(MonitorConfig{InstanceID: "b", Logger: anchordtest.Logger(t)}, st, b.b)
	require.NoError(t, err)
	res, err := mon.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Reposted)
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return b.q.Len() == 1 })
	r = rows(t, st, "b")
	require.Len(t, r, 1)
	require.Equal(t, 2, r[0].Attempts, "the failure and the death both count")
}

func TestTakeOverFencesTheSlowInstance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		broker := mempubsub.NewBroker(pubsub.Topics...)
		slow := startNode(t, st, broker, "slow", true)
		ctx := context.Background()
		for i := range 3 {
			require.NoError(t, slow.b.Add(ctx, opFor(i)))
		}
		anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return slow.q.Len() == 3 })
		batch := slow.q.Remove(10) // slow is about to anchor when it stalls
		slow.stop()

		// Another instance's monitor finds slow's entry expired, fences it and reposts.
		healthy := startNode(t, st, broker, "healthy", true)
		time.Sleep(5 * time.Millisecond) // slow's entry must be older than the expiration
		mon, err := NewMonitor(MonitorConfig{InstanceID: "healthy", TaskExpiration: time.Millisecond}, st, healthy.b)
		require.NoError(t, err)
		res, err := mon.RunOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"slow"}, res.TakenOver)
		require.Equal(t, 3, res.Reposted)
		anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return healthy.q.Len() == 3 })
		require.Empty(t, rows(t, st, "slow"))

		// slow wakes up: its Ack fails, so nothing it batched is anchored twice…
		err = st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return batch.Ack(ctx, tx, 1) })
		require.ErrorIs(t, err, store.ErrLeaseLost)
		// …and its heartbeat tells it to stop.
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		require.ErrorIs(t, slow.b.Heartbeat(hctx), ErrTakenOver)

		again, err := mon.RunOnce(ctx)
		require.NoError(t, err)
		require.Empty(t, again.TakenOver)
		require.Zero(t, again.Reposted)
	})
}

func TestMonitorRepostsInBoundedRuns(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.PostgresOpener(t))
	broker := mempubsub.NewBroker(pubsub.Topics...)
	dead := startNode(t, st, broker, "dead", true)
	ctx := context.Background()
	for i := range 5 {
		require.NoError(t, dead.b.Add(ctx, opFor(i)))
	}
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return dead.q.Len() == 5 })
	dead.stop()
	live := startNode(t, st, broker, "live", true)
	time.Sleep(5 * time.Millisecond)
	mon, err := NewMonitor(MonitorConfig{InstanceID: "live", TaskExpiration: time.Millisecond, MaxOpsToRepost: 2}, st, live.b)
	require.NoError(t, err)
	total := 0
	for range 3 {
		res, err := mon.RunOnce(ctx)
		require.NoError(t, err)
		require.LessOrEqual(t, res.Reposted, 2)
		total += res.Reposted
	}
	require.Equal(t, 5, total)
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return live.q.Len() == 5 })
}

func TestGiveBackAtShutdown(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		broker := mempubsub.NewBroker(pubsub.Topics...)
		leaving := startNode(t, st, broker, "leaving", true)
		ctx := context.Background()
		for i := range 4 {
			require.NoError(t, leaving.b.Add(ctx, opFor(i)))
		}
		anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return leaving.q.Len() == 4 })
		leaving.stop()
		staying := startNode(t, st, broker, "staying", true)
		require.NoError(t, leaving.b.GiveBack(ctx))
		anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return staying.q.Len() == 4 })
		require.Empty(t, rows(t, st, "leaving"))
		require.ErrorIs(t, st.OpQueueTaskCheck(ctx, "leaving"), store.ErrLeaseLost, "no entry left to expire")
	})
}

func TestMalformedMessageIsParked(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	broker := mempubsub.NewBroker(pubsub.Topics...)
	n := startNode(t, st, broker, "n", true)
	for _, body := range []string{"not json", `{"ops":[]}`, `{"ops":[{"opId":"x","suffix":"s","request":"e30="},{"opId":""}]}`} {
		require.NoError(t, n.b.ps.Publish(context.Background(), pubsub.TopicOperation, &pubsub.Message{Body: []byte(body)}))
	}
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return len(broker.Parked()) == 3 })
	require.Zero(t, n.q.Len())
}
