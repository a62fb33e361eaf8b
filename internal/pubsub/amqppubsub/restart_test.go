package amqppubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/pubsubtest"
	"github.com/anchord/anchord/internal/servicetest"
)

// TestPrivateBroker breaks a private RabbitMQ node, never the shared one. Its subtests run in
// sequence because they take turns stopping and starting that node.
//
// Not parallel, against the house rule: booting a node and pushing 1,000 msg/s through it takes
// both cores of a small machine for seconds, which would make the timed conformance scenarios
// (which run in parallel after it) measure the load instead of the schedule.
func TestPrivateBroker(t *testing.T) { //nolint:paralleltest // see above
	if testing.Short() {
		t.Skip("starts a RabbitMQ node")
	}
	node := servicetest.StartRabbitMQ(t)
	t.Run("StartupWaitsForBroker", func(t *testing.T) { testStartupWaitsForBroker(t, node) })
	t.Run("BrokerRestart", func(t *testing.T) { testBrokerRestart(t, node) })
	t.Run("BrokerKilled", func(t *testing.T) { testBrokerKilled(t, node) })
}

// testBrokerKilled: messages confirmed before the broker is killed with SIGKILL (no clean
// shutdown) are delivered after it starts again, on classic and quorum queues; publishes while
// it is dead fail fast with ErrUnavailable.
func testBrokerKilled(t *testing.T, node *servicetest.RabbitMQ) {
	const n = 500
	var instances []*running
	for _, qt := range []QueueType{QueueClassic, QueueQuorum} {
		cfg := Config{URL: node.URL(), Prefix: testPrefix(t), QueueType: qt, ReconnectMax: time.Second}
		removeOnCleanup(t, cfg)
		instances = append(instances, startPubSub(t, cfg))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	body := make([]byte, 1024)
	ids := make([]map[string]bool, len(instances))
	for i, ps := range instances {
		ids[i] = map[string]bool{}
		msgs := make([]*pubsub.Message, n)
		for j := range msgs {
			msgs[j] = &pubsub.Message{Body: body}
		}
		require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, msgs...))
		for _, m := range msgs {
			ids[i][m.ID] = true
		}
	}

	node.Kill()
	err := instances[0].Publish(ctx, pubsub.TopicAnchor, &pubsub.Message{Body: body})
	require.ErrorIs(t, err, pubsub.ErrUnavailable)
	require.ErrorIs(t, instances[0].Check(ctx), pubsub.ErrUnavailable)
	node.Start()

	for i, ps := range instances {
		var mu sync.Mutex
		seen := map[string]bool{}
		all := make(chan struct{})
		subCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- ps.Subscribe(subCtx, pubsub.TopicAnchor, 8, func(_ context.Context, msg *pubsub.Message) error {
				mu.Lock()
				defer mu.Unlock()
				if ids[i][msg.ID] && !seen[msg.ID] {
					seen[msg.ID] = true
					if len(seen) == n {
						close(all)
					}
				}
				return nil
			})
		}()
		select {
		case <-all:
		case <-time.After(time.Minute):
			mu.Lock()
			t.Fatalf("%s: %d of %d confirmed messages delivered after the kill", ps.cfg.QueueType, len(seen), n)
		}
		stop()
		require.NoError(t, anchordtest.WaitOrTimeout(t, done, waitTimeoutTest))
	}
}

// testStartupWaitsForBroker: New waits for an unreachable broker (bounded by its context) and
// logs that it does, then succeeds once the broker is up.
func testStartupWaitsForBroker(t *testing.T, node *servicetest.RabbitMQ) {
	node.StopApp()
	waiting := make(chan struct{}, 1)
	cfg := Config{
		URL:               node.URL(),
		Prefix:            testPrefix(t),
		ReconnectInterval: 50 * time.Millisecond,
		ReconnectMax:      300 * time.Millisecond,
		Registerer:        prometheus.NewRegistry(),
		Logger: slog.New(&signalHandler{
			Handler: anchordtest.Logger(t).Handler(), msg: "waiting for RabbitMQ", ch: waiting,
		}),
	}

	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := New(short, cfg)
	require.ErrorIs(t, err, pubsub.ErrUnavailable)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	<-waiting

	type result struct {
		ps  *PubSub
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ps, err := New(ctx, cfg)
		done <- result{ps, err}
	}()
	anchordtest.WaitOrTimeout(t, waiting, 30*time.Second)
	node.StartApp()
	res := anchordtest.WaitOrTimeout(t, done, time.Minute)
	require.NoError(t, res.err)
	require.NoError(t, res.ps.Check(context.Background()))
	require.NoError(t, res.ps.removeTopology(context.Background()))
	require.NoError(t, res.ps.Close())
}

// testBrokerRestart: publishers and consumers run at about 1,000 msg/s while the broker's app
// is stopped and started. During the outage publishes fail fast with ErrUnavailable and Check
// reports it; afterwards every confirmed message has been handled at least once.
func testBrokerRestart(t *testing.T, node *servicetest.RabbitMQ) {
	const (
		publishers   = 16
		perPublisher = 500
		total        = publishers * perPublisher
		tick         = 16 * time.Millisecond // 16 publishers × 62.5/s ≈ 1,000 msg/s
		outageAfter  = total / 4
	)
	reg := prometheus.NewRegistry()
	cfg := Config{
		URL:          node.URL(),
		Prefix:       testPrefix(t),
		Redelivery:   pubsubtest.Schedule,
		ReconnectMax: time.Second,
		DialTimeout:  2 * time.Second,
		Registerer:   reg,
	}
	removeOnCleanup(t, cfg)
	instances := []*running{startPubSub(t, cfg), startPubSub(t, cfg)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var (
		mu         sync.Mutex
		handled    = map[string]int{}
		allHandled = make(chan struct{})
	)
	handler := func(_ context.Context, msg *pubsub.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled[msg.ID]++
		if len(handled) == total && handled[msg.ID] == 1 {
			close(allHandled)
		}
		return nil
	}
	subCtx, stopSubs := context.WithCancel(ctx)
	var subs sync.WaitGroup
	subErrs := make(chan error, len(instances))
	for _, ps := range instances {
		subs.Go(func() { subErrs <- ps.Subscribe(subCtx, pubsub.TopicOperation, 8, handler) })
	}
	defer func() {
		stopSubs()
		subs.Wait()
		close(subErrs)
		for err := range subErrs {
			require.NoError(t, err)
		}
	}()

	var (
		confirmedMu   sync.Mutex
		confirmed     []string
		confirmedN    atomic.Int64
		failures      atomic.Int64
		slowestFail   atomic.Int64 // nanoseconds
		unexpectedMu  sync.Mutex
		unexpected    []error
		reachedOutage = make(chan struct{})
		failedEnough  = make(chan struct{})
		outageOnce    sync.Once
		failOnce      sync.Once
		pubs          sync.WaitGroup
	)
	start := time.Now()
	for p := range publishers {
		ps := instances[p%len(instances)]
		pubs.Go(func() {
			ticker := time.NewTicker(tick)
			defer ticker.Stop()
			body := make([]byte, 1024)
			for i := range perPublisher {
				select {
				case <-ticker.C:
				case <-ctx.Done():
					return
				}
				msg := &pubsub.Message{ID: fmt.Sprintf("p%02d-%04d", p, i), Body: body}
				for ctx.Err() == nil {
					callCtx, cancelCall := context.WithTimeout(ctx, 10*time.Second)
					began := time.Now()
					err := ps.Publish(callCtx, pubsub.TopicOperation, msg)
					cancelCall()
					if err == nil {
						confirmedMu.Lock()
						confirmed = append(confirmed, msg.ID)
						confirmedMu.Unlock()
						if confirmedN.Add(1) >= outageAfter {
							outageOnce.Do(func() { close(reachedOutage) })
						}
						break
					}
					if !errors.Is(err, pubsub.ErrUnavailable) {
						unexpectedMu.Lock()
						unexpected = append(unexpected, err)
						unexpectedMu.Unlock()
					}
					took := int64(time.Since(began))
					for {
						old := slowestFail.Load()
						if took <= old || slowestFail.CompareAndSwap(old, took) {
							break
						}
					}
					if failures.Add(1) >= 50 {
						failOnce.Do(func() { close(failedEnough) })
					}
					loop.Sleep(ctx, 20*time.Millisecond) // pace retries, as a caller would
				}
			}
		})
	}
	pubsDone := make(chan struct{})
	go func() { pubs.Wait(); close(pubsDone) }()

	anchordtest.WaitOrTimeout(t, reachedOutage, time.Minute)
	t.Logf("stopping the broker after %d confirmed messages (%s)", confirmedN.Load(), time.Since(start).Round(time.Millisecond))
	node.StopApp()
	stoppedAt := time.Now()
	require.ErrorIs(t, instances[0].Check(ctx), pubsub.ErrUnavailable, "Check reports the broker down")
	anchordtest.WaitOrTimeout(t, failedEnough, time.Minute)
	node.StartApp()
	t.Logf("broker back after %s; %d publish attempts failed meanwhile", time.Since(stoppedAt).Round(time.Millisecond), failures.Load())

	anchordtest.WaitOrTimeout(t, pubsDone, 2*time.Minute)
	elapsed := time.Since(start)
	anchordtest.WaitOrTimeout(t, allHandled, time.Minute)
	require.NoError(t, instances[0].Check(ctx))

	unexpectedMu.Lock()
	require.Empty(t, unexpected, "publish errors other than ErrUnavailable")
	unexpectedMu.Unlock()
	confirmedMu.Lock()
	defer confirmedMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, confirmed, total)
	duplicates := 0
	for _, id := range confirmed {
		require.Positive(t, handled[id], "confirmed message %s never handled", id)
		duplicates += handled[id] - 1
	}
	t.Logf("%d messages in %s (%.0f msg/s incl. outage); %d failed publish attempts, slowest failure %s; %d duplicate deliveries",
		total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), failures.Load(),
		time.Duration(slowestFail.Load()).Round(time.Millisecond), duplicates)
	require.Less(t, time.Duration(slowestFail.Load()), cfg.DialTimeout+time.Second, "publishes fail fast while the broker is down")

	m := newMetrics(reg)
	require.Positive(t, testutil.ToFloat64(m.publishFailed.WithLabelValues(pubsub.TopicOperation)))
	require.Positive(t, testutil.ToFloat64(m.dials.WithLabelValues(rolePublisher, "error")))
	require.GreaterOrEqual(t, testutil.ToFloat64(m.confirmed.WithLabelValues(pubsub.TopicOperation)), float64(total))
	require.GreaterOrEqual(t, testutil.ToFloat64(m.acked.WithLabelValues(pubsub.TopicOperation)), float64(total))
	require.Equal(t, 1.0, testutil.ToFloat64(m.connectionUp.WithLabelValues(rolePublisher)))
}

// signalHandler forwards records and signals (without blocking) each record whose message is
// msg.
type signalHandler struct {
	slog.Handler
	msg string
	ch  chan struct{}
}

func (h *signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h *signalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithAttrs(attrs), msg: h.msg, ch: h.ch}
}

func (h *signalHandler) WithGroup(name string) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithGroup(name), msg: h.msg, ch: h.ch}
}
