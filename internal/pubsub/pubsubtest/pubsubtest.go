// Package pubsubtest is the conformance suite of the pubsub contract. Every implementation calls
// Exercise from its tests; a scenario that depends on a guarantee an implementation does not
// give checks Features and skips itself, so implementations never pick scenarios by hand.
//
// Scenarios run in parallel, each in its own namespace (Config.Namespace), so one broker serves
// them all. Timing assertions use small intervals (100 ms) and a tolerance (Features.Slack) wide
// enough for a loaded two-core machine.
//
// It is imported only from _test.go files.
package pubsubtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/pubsub"
)

// Features declares what an implementation guarantees beyond the contract's minimum.
type Features struct {
	// Persistent is true when confirmed messages survive a restart of the broker. The suite does
	// not restart brokers (implementations with a broker have their own restart test); the flag
	// documents the difference and lets scenarios that need it skip.
	Persistent bool
	// Slack is the lateness tolerated on every timed expectation (redelivery waits, delayed
	// publish). Zero means SlackDefault.
	Slack time.Duration
}

// SlackDefault is the default Features.Slack.
const SlackDefault = 400 * time.Millisecond

// Config is what a scenario asks of a new instance.
type Config struct {
	// Namespace isolates scenarios. Instances built with the same Namespace share their topics
	// (competing consumers; messages outlive the instance that published them); instances of
	// different namespaces never see each other's messages. It is a short lowercase hex string.
	Namespace string
	// Redelivery is the retry schedule the instance must follow.
	Redelivery pubsub.RedeliveryConfig
	// ParkFunc receives parked messages. Nil means the implementation keeps them itself.
	ParkFunc pubsub.ParkFunc
	// DrainTimeout bounds the drain of a cancelled subscription; zero means the
	// implementation's default.
	DrainTimeout time.Duration
}

// NewFunc returns a new instance, ready to publish and subscribe, with every background task it
// needs already running. It registers its own cleanup with t.Cleanup: closing the instance and,
// after the last instance of a namespace is closed, deleting whatever the namespace created on
// the broker.
type NewFunc func(t *testing.T, cfg Config) pubsub.PubSub

// Schedule is the redelivery schedule the timed scenarios use: waits of 0, 100, 200 and
// 300 ms (capped), parked after the fifth failed delivery.
var Schedule = pubsub.RedeliveryConfig{
	MaxAttempts:     5,
	InitialInterval: 100 * time.Millisecond,
	Multiplier:      2,
	MaxInterval:     300 * time.Millisecond,
}

// waitTimeout bounds every wait for something that must happen.
const waitTimeout = 20 * time.Second

// Exercise runs every scenario against the implementation built by newPubSub.
func Exercise(t *testing.T, features Features, newPubSub NewFunc) {
	t.Helper()
	if features.Slack <= 0 {
		features.Slack = SlackDefault
	}
	scenarios := []struct {
		name string
		run  func(t *testing.T, b *bundle)
	}{
		{"RoundTrip", testRoundTrip},
		{"PublishUnknownTopic", testPublishUnknownTopic},
		{"SubscribeUnknownTopic", testSubscribeUnknownTopic},
		{"Check", testCheck},
		{"CompetingConsumers", testCompetingConsumers},
		{"MessagesOutliveInstance", testMessagesOutliveInstance},
		{"NackRedelivered", testNackRedelivered},
		{"BackoffThenPark", testBackoffThenPark},
		{"PermanentParksAtOnce", testPermanentParksAtOnce},
		{"ParkFuncFailureRetried", testParkFuncFailureRetried},
		{"ParkedRepublish", testParkedRepublish},
		{"DelayedPublish", testDelayedPublish},
		{"PoolRunsConcurrently", testPoolRunsConcurrently},
		{"NoAckBlocksNextDelivery", testNoAckBlocksNextDelivery},
		{"BlockedHandlerDoesNotBlockOtherSlot", testBlockedHandlerDoesNotBlockOtherSlot},
		{"CancelDrainsInFlight", testCancelDrainsInFlight},
		{"DrainTimeoutPutsMessageBack", testDrainTimeoutPutsMessageBack},
		{"ClosedFails", testClosedFails},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, newBundle(t, features, newPubSub))
		})
	}
}

// bundle is one scenario's fixture.
type bundle struct {
	t         *testing.T
	features  Features
	newPubSub NewFunc
	namespace string
	parked    chan pubsub.Parked
}

func newBundle(t *testing.T, features Features, newPubSub NewFunc) *bundle {
	t.Helper()
	var raw [5]byte
	_, err := rand.Read(raw[:])
	require.NoError(t, err)
	return &bundle{
		t:         t,
		features:  features,
		newPubSub: newPubSub,
		namespace: hex.EncodeToString(raw[:]),
		parked:    make(chan pubsub.Parked, 100),
	}
}

// config returns the scenario's default instance configuration: the test schedule and a
// ParkFunc that records into b.parked.
func (b *bundle) config() Config {
	return Config{
		Namespace:  b.namespace,
		Redelivery: Schedule,
		ParkFunc: func(_ context.Context, p pubsub.Parked) error {
			b.parked <- p
			return nil
		},
	}
}

// instance builds an instance with the scenario's default configuration.
func (b *bundle) instance() pubsub.PubSub {
	b.t.Helper()
	return b.newPubSub(b.t, b.config())
}

func (b *bundle) ctx() context.Context {
	return contextFor(b.t)
}

func contextFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// subscription is a running Subscribe call.
type subscription struct {
	cancel context.CancelFunc
	done   chan error
}

// subscribe runs Subscribe in a goroutine until stop (or the end of the test, before the
// instance's own cleanup closes it).
func subscribe(t *testing.T, ps pubsub.Subscriber, topic string, pool int, h pubsub.Handler) *subscription {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &subscription{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- ps.Subscribe(ctx, topic, pool, h) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the subscription and waits for Subscribe to return nil. It is idempotent.
func (s *subscription) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok {
			close(s.done)
			require.NoError(t, err, "Subscribe returned an error")
		}
	case <-time.After(waitTimeout):
		t.Fatalf("Subscribe did not return within %s of cancellation", waitTimeout)
	}
}

// delivery is one handler invocation as a scenario records it.
type delivery struct {
	msg pubsub.Message
	at  time.Time
}

// recorder is a handler that sends every delivery to a channel and returns what result says.
type recorder struct {
	ch     chan delivery
	mu     sync.Mutex
	result func(msg *pubsub.Message) error
}

func newRecorder(result func(msg *pubsub.Message) error) *recorder {
	if result == nil {
		result = func(*pubsub.Message) error { return nil }
	}
	return &recorder{ch: make(chan delivery, 1000), result: result}
}

func (r *recorder) handle(_ context.Context, msg *pubsub.Message) error {
	m := *msg
	r.ch <- delivery{msg: m, at: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.result(msg)
}

func (r *recorder) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-r.ch:
		return d
	case <-time.After(waitTimeout):
		t.Fatalf("no delivery within %s", waitTimeout)
	}
	return delivery{}
}

// requireNone fails if anything is delivered within window. The contract offers no signal for
// "will never be delivered", so this is the one place the suite waits for time to pass.
func (r *recorder) requireNone(t *testing.T, window time.Duration, msgAndArgs ...any) {
	t.Helper()
	select {
	case d := <-r.ch:
		require.Failf(t, "unexpected delivery", "message %s attempt %d delivered: %v", d.msg.ID, d.msg.Attempt, msgAndArgs)
	case <-time.After(window):
	}
}

func (b *bundle) nextParked() pubsub.Parked {
	b.t.Helper()
	select {
	case p := <-b.parked:
		return p
	case <-time.After(waitTimeout):
		b.t.Fatalf("nothing parked within %s", waitTimeout)
	}
	return pubsub.Parked{}
}

func message(body string) *pubsub.Message {
	return &pubsub.Message{Body: []byte(body)}
}
