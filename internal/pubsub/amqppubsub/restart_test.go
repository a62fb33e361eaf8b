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
	for _, sub := range []struct {
		name string
		run  func(*testing.T, *servicetest.RabbitMQ)
	}{
		{"StartupWaitsForBroker", testStartupWaitsForBroker},
		{"BrokerRestart", testBrokerRestart},
		{"BrokerKilled", testBrokerKilled},
		{"BrokerBlocksPublishing", testBrokerBlocksPublishing},
	} {
		t.Run(sub.name, func(t *testing.T) { sub.run(t, node) }) //nolint:paralleltest // see above
		// A subtest that failed between stopping and starting the node must not fail the next.
		node.Restore()
	}
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

// testBrokerBlocksPublishing: under a memory alarm the broker keeps the connection open and
// stops reading what is published on it. Check, which /healthcheck reports as the broker's
// state, answers ErrUnavailable once the broker says it blocks the publisher connection (here it
// said so once that connection published), the gauge counts the connection, and both recover when
// the alarm clears; every publish confirmed before or after it is delivered.
func testBrokerBlocksPublishing(t *testing.T, node *servicetest.RabbitMQ) {
	reg := prometheus.NewRegistry()
	cfg := Config{URL: node.URL(), Prefix: testPrefix(t), Registerer: reg}
	removeOnCleanup(t, cfg)
	ps := startPubSub(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	blocked := func() float64 {
		return testutil.ToFloat64(ps.metrics.blocked.WithLabelValues("publisher"))
	}
	before := &pubsub.Message{Body: []byte("before")}
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, before))
	require.NoError(t, ps.Check(ctx))

	node.RaiseMemoryAlarm()
	// The broker holds this publish unread; it is what makes the broker say it blocks us.
	held, stopHeld := context.WithTimeout(ctx, 2*time.Second)
	defer stopHeld()
	err := ps.Publish(held, pubsub.TopicAnchor, &pubsub.Message{Body: []byte("held")})
	require.ErrorIs(t, err, pubsub.ErrUnavailable)
	require.Eventually(t, func() bool {
		return errors.Is(ps.Check(ctx), pubsub.ErrUnavailable)
	}, waitTimeoutTest, 20*time.Millisecond, "Check stayed healthy under the alarm")
	require.ErrorContains(t, ps.Check(ctx), "blocks the publisher connection")
	require.Equal(t, 1.0, blocked())

	node.ClearMemoryAlarm()
	require.Eventually(t, func() bool { return ps.Check(ctx) == nil }, waitTimeoutTest, 20*time.Millisecond,
		"Check stayed down after the alarm cleared")
	require.Zero(t, blocked())
	after := &pubsub.Message{Body: []byte("after")}
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, after))

	want := map[string]bool{before.ID: true, after.ID: true}
	var mu sync.Mutex
	all := make(chan struct{})
	subCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- ps.Subscribe(subCtx, pubsub.TopicAnchor, 4, func(_ context.Context, msg *pubsub.Message) error {
			mu.Lock()
			defer mu.Unlock()
			if want[msg.ID] {
				delete(want, msg.ID)
				if len(want) == 0 {
					close(all)
				}
			}
			return nil
		})
	}()
	anchordtest.WaitOrTimeout(t, all, waitTimeoutTest)
	stop()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, waitTimeoutTest))
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
// reports it; afterwards every publisher gets its publishes confirmed again, and every confirmed
// message has been handled at least once.
//
// The publishers keep publishing until each has had a publish confirmed after the restart, not
// for a fixed number of messages: rabbitmqctl stop_app can take 30 s on a loaded machine, and the
// broker confirms publishes for much of that time, so a fixed budget could run out before the
// outage even began (and then nobody would publish into it).
func testBrokerRestart(t *testing.T, node *servicetest.RabbitMQ) {
	const (
		publishers  = 16
		tick        = 16 * time.Millisecond // 16 publishers × 62.5/s ≈ 1,000 msg/s
		outageAfter = 2000                  // confirmed messages before the broker is stopped
		callTimeout = 10 * time.Second      // each Publish call's context
		outageFails = 50                    // failed publishes into the outage before it ends
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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var (
		mu         sync.Mutex
		handled    = map[string]int{}
		waitFor    map[string]bool // confirmed messages not handled yet, once publishing stopped
		allHandled = make(chan struct{})
	)
	handler := func(_ context.Context, msg *pubsub.Message) error {
		mu.Lock()
		defer mu.Unlock()
		handled[msg.ID]++
		if waitFor[msg.ID] {
			delete(waitFor, msg.ID)
			if len(waitFor) == 0 {
				close(allHandled)
			}
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
		confirmedMu    sync.Mutex
		confirmed      []string
		confirmedN     atomic.Int64
		failures       atomic.Int64 // every failed publish
		slowestCall    atomic.Int64 // nanoseconds, of every failed publish
		downAt, backAt atomic.Int64 // UnixNano when StopApp and StartApp returned; 0 before
		duringOutage   atomic.Int64 // failed publishes that began while the app was stopped
		slowestOutage  atomic.Int64 // nanoseconds, of those
		resumed        atomic.Int64 // publishers with a publish begun and confirmed after backAt
		unexpectedMu   sync.Mutex
		unexpected     []error
		reachedOutage  = make(chan struct{})
		failedEnough   = make(chan struct{})
		allResumed     = make(chan struct{})
		stopPublishing = make(chan struct{})
		outageOnce     sync.Once
		pubs           sync.WaitGroup
	)
	raise := func(highest *atomic.Int64, v int64) {
		for {
			old := highest.Load()
			if v <= old || highest.CompareAndSwap(old, v) {
				return
			}
		}
	}
	start := time.Now()
	for p := range publishers {
		ps := instances[p%len(instances)]
		pubs.Go(func() {
			ticker := time.NewTicker(tick)
			defer ticker.Stop()
			body := make([]byte, 1024)
			resumedHere := false
			for i := 0; ; i++ {
				select {
				case <-ticker.C:
				case <-stopPublishing:
					return
				case <-ctx.Done():
					return
				}
				msg := &pubsub.Message{ID: fmt.Sprintf("p%02d-%05d", p, i), Body: body}
				for ctx.Err() == nil {
					callCtx, cancelCall := context.WithTimeout(ctx, callTimeout)
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
						if back := backAt.Load(); !resumedHere && back != 0 && began.UnixNano() > back {
							resumedHere = true
							if resumed.Add(1) == publishers {
								close(allResumed)
							}
						}
						break
					}
					if !errors.Is(err, pubsub.ErrUnavailable) {
						unexpectedMu.Lock()
						unexpected = append(unexpected, err)
						unexpectedMu.Unlock()
					}
					took := int64(time.Since(began))
					failures.Add(1)
					raise(&slowestCall, took)
					if down, back := downAt.Load(), backAt.Load(); down != 0 && began.UnixNano() >= down && back == 0 {
						raise(&slowestOutage, took)
						if duringOutage.Add(1) == outageFails {
							close(failedEnough)
						}
					}
					select {
					case <-stopPublishing: // only when the test failed: the broker may be down
						return
					default:
					}
					loop.Sleep(ctx, 20*time.Millisecond) // pace retries, as a caller would
				}
			}
		})
	}
	pubsDone := make(chan struct{})
	go func() { pubs.Wait(); close(pubsDone) }()
	defer func() {
		select {
		case <-stopPublishing:
		default:
			close(stopPublishing) // the test failed midway
		}
		<-pubsDone
	}()

	anchordtest.WaitOrTimeout(t, reachedOutage, time.Minute)
	stopping := time.Now()
	t.Logf("stopping the broker after %d confirmed messages (%s)", confirmedN.Load(), stopping.Sub(start).Round(time.Millisecond))
	node.StopApp()
	downAt.Store(time.Now().UnixNano())
	t.Logf("stop_app took %s; %d messages confirmed so far, %d publish attempts failed",
		time.Since(stopping).Round(time.Millisecond), confirmedN.Load(), failures.Load())
	require.ErrorIs(t, instances[0].Check(ctx), pubsub.ErrUnavailable, "Check reports the broker down")
	anchordtest.WaitOrTimeout(t, failedEnough, time.Minute)
	node.StartApp()
	backAt.Store(time.Now().UnixNano())
	t.Logf("broker back after %s; %d publish attempts failed while it was down",
		time.Duration(backAt.Load()-downAt.Load()).Round(time.Millisecond), duringOutage.Load())

	anchordtest.WaitOrTimeout(t, allResumed, time.Minute)
	close(stopPublishing)
	anchordtest.WaitOrTimeout(t, pubsDone, time.Minute)
	elapsed := time.Since(start)
	require.NoError(t, instances[0].Check(ctx))

	confirmedMu.Lock()
	defer confirmedMu.Unlock()
	mu.Lock()
	waitFor = map[string]bool{}
	for _, id := range confirmed {
		if handled[id] == 0 {
			waitFor[id] = true
		}
	}
	if len(waitFor) == 0 {
		close(allHandled)
	}
	mu.Unlock()
	select {
	case <-allHandled:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d confirmed messages not handled within a minute", len(waitFor), len(confirmed))
	}

	unexpectedMu.Lock()
	require.Empty(t, unexpected, "publish errors other than ErrUnavailable")
	unexpectedMu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	duplicates := 0
	for _, id := range confirmed {
		require.Positive(t, handled[id], "confirmed message %s never handled", id)
		duplicates += handled[id] - 1
	}
	t.Logf("%d messages in %s (%.0f msg/s incl. outage); %d failed publish attempts, slowest %s (%s while the broker was down); %d duplicate deliveries",
		len(confirmed), elapsed.Round(time.Millisecond), float64(len(confirmed))/elapsed.Seconds(), failures.Load(),
		time.Duration(slowestCall.Load()).Round(time.Millisecond), time.Duration(slowestOutage.Load()).Round(time.Millisecond),
		duplicates)
	// A publish in flight when the broker began to stop waits for it as long as its context
	// allows; one begun while it was down fails within a dial.
	require.Less(t, time.Duration(slowestCall.Load()), callTimeout+2*time.Second, "no publish outlives its context")
	require.Less(t, time.Duration(slowestOutage.Load()), cfg.DialTimeout+time.Second, "publishes fail fast while the broker is down")

	m := newMetrics(reg)
	require.Positive(t, testutil.ToFloat64(m.publishFailed.WithLabelValues(pubsub.TopicOperation)))
	require.Positive(t, testutil.ToFloat64(m.dials.WithLabelValues(rolePublisher, "error")))
	require.GreaterOrEqual(t, testutil.ToFloat64(m.confirmed.WithLabelValues(pubsub.TopicOperation)), float64(len(confirmed)))
	require.GreaterOrEqual(t, testutil.ToFloat64(m.acked.WithLabelValues(pubsub.TopicOperation)), float64(len(confirmed)))
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
