package pubsubtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/pubsub"
)

// testRoundTrip: published messages arrive once each with ID, headers, body, topic and
// Attempt 1, and reserved headers do not leak to the handler.
func testRoundTrip(t *testing.T, b *bundle) {
	ps := b.instance()
	msgs := []*pubsub.Message{
		{Body: []byte("one"), Headers: map[string]string{"k": "v1"}},
		{Body: []byte("two"), Headers: map[string]string{"k": "v2", "other": "x"}},
		{ID: "fixed-id-3", Body: []byte("three")},
	}
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchor, msgs...))
	for _, m := range msgs {
		require.NotEmpty(t, m.ID, "Publish fills an empty ID")
	}
	require.Equal(t, "fixed-id-3", msgs[2].ID)

	rec := newRecorder(nil)
	subscribe(t, ps, pubsub.TopicAnchor, 1, rec.handle)
	got := map[string]pubsub.Message{}
	for range msgs {
		d := rec.next(t)
		got[d.msg.ID] = d.msg
	}
	for _, m := range msgs {
		g, ok := got[m.ID]
		require.True(t, ok, "message %s not delivered", m.ID)
		require.Equal(t, m.Body, g.Body)
		require.Equal(t, 1, g.Attempt)
		require.Equal(t, pubsub.TopicAnchor, g.Topic)
		for k, v := range m.Headers {
			require.Equal(t, v, g.Headers[k])
		}
		for k := range g.Headers {
			require.False(t, strings.HasPrefix(k, "x-"), "reserved header %q leaked to the handler", k)
		}
	}
	rec.requireNone(t, 200*time.Millisecond, "each message is delivered once")
}

// testPublishUnknownTopic: a topic without a queue is an error, not a silent drop.
func testPublishUnknownTopic(t *testing.T, b *bundle) {
	ps := b.instance()
	err := ps.Publish(b.ctx(), "no-such-topic", message("lost"))
	require.ErrorIs(t, err, pubsub.ErrUnroutable)
	err = ps.PublishDelayed(b.ctx(), "no-such-topic", 100*time.Millisecond, message("lost"))
	require.ErrorIs(t, err, pubsub.ErrUnroutable)
}

// testSubscribeUnknownTopic: subscribing to a topic without a queue fails at once.
func testSubscribeUnknownTopic(t *testing.T, b *bundle) {
	ps := b.instance()
	ctx, cancel := context.WithTimeout(b.ctx(), waitTimeout)
	defer cancel()
	err := ps.Subscribe(ctx, "no-such-topic", 1, func(context.Context, *pubsub.Message) error { return nil })
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "Subscribe must fail, not wait")
}

// testCheck: a live instance is healthy.
func testCheck(t *testing.T, b *bundle) {
	ps := b.instance()
	require.NoError(t, ps.Check(b.ctx()))
}

// testCompetingConsumers: across three instances sharing a namespace, each message is handled
// by exactly one subscriber, and more than one instance takes part.
func testCompetingConsumers(t *testing.T, b *bundle) {
	const instances, pool, n = 3, 2, 90
	var (
		mu       sync.Mutex
		handled  = map[string]int{}
		by       = map[int]int{}
		allDone  = make(chan struct{})
		twoSeen  = make(chan struct{})
		finished bool
	)
	handler := func(instance int) pubsub.Handler {
		return func(ctx context.Context, msg *pubsub.Message) error {
			mu.Lock()
			by[instance]++
			if len(by) == 2 {
				select {
				case <-twoSeen:
				default:
					close(twoSeen)
				}
			}
			mu.Unlock()
			// Hold every handler until a second instance has taken a message, so that one
			// instance that subscribed early cannot take everything before the others start.
			select {
			case <-twoSeen:
			case <-ctx.Done():
				return ctx.Err()
			}
			mu.Lock()
			defer mu.Unlock()
			handled[msg.ID]++
			if len(handled) == n && !finished {
				finished = true
				close(allDone)
			}
			return nil
		}
	}
	var pss []pubsub.PubSub
	for i := range instances {
		ps := b.instance()
		pss = append(pss, ps)
		subscribe(t, ps, pubsub.TopicOperation, pool, handler(i))
	}
	msgs := make([]*pubsub.Message, n)
	for i := range msgs {
		msgs[i] = message(fmt.Sprintf("op-%d", i))
	}
	require.NoError(t, pss[0].Publish(b.ctx(), pubsub.TopicOperation, msgs...))

	select {
	case <-allDone:
	case <-time.After(waitTimeout):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("only %d of %d messages handled within %s", len(handled), n, waitTimeout)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range msgs {
		require.Equal(t, 1, handled[m.ID], "message %s handled %d times", m.ID, handled[m.ID])
	}
	require.GreaterOrEqual(t, len(by), 2, "messages spread over instances: %v", by)
}

// testMessagesOutliveInstance: a message published by an instance that has since closed is
// delivered to another instance of the namespace.
func testMessagesOutliveInstance(t *testing.T, b *bundle) {
	first := b.instance()
	msg := message("survivor")
	require.NoError(t, first.Publish(b.ctx(), pubsub.TopicAnchorLinkset, msg))
	require.NoError(t, first.Close())

	second := b.instance()
	rec := newRecorder(nil)
	subscribe(t, second, pubsub.TopicAnchorLinkset, 1, rec.handle)
	d := rec.next(t)
	require.Equal(t, msg.ID, d.msg.ID)
	require.Equal(t, "survivor", string(d.msg.Body))
}

// testClosedFails: after Close, Publish, Subscribe and Check fail with ErrClosed.
func testClosedFails(t *testing.T, b *bundle) {
	ps := b.instance()
	require.NoError(t, ps.Close())
	ctx := b.ctx()
	require.ErrorIs(t, ps.Publish(ctx, pubsub.TopicOperation, message("late")), pubsub.ErrClosed)
	require.ErrorIs(t, ps.PublishDelayed(ctx, pubsub.TopicOperation, time.Second, message("late")), pubsub.ErrClosed)
	err := ps.Subscribe(ctx, pubsub.TopicOperation, 1, func(context.Context, *pubsub.Message) error { return nil })
	require.ErrorIs(t, err, pubsub.ErrClosed)
	require.ErrorIs(t, ps.Check(ctx), pubsub.ErrClosed)
}
