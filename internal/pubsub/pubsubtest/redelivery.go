package pubsubtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/pubsub"
)

// earlyTolerance is how much earlier than scheduled a timed delivery may arrive: brokers round
// TTLs to milliseconds and expire them on their own clock.
const earlyTolerance = 20 * time.Millisecond

// testNackRedelivered: a handler error has the message redelivered at once with the next
// attempt number; success then ends it.
func testNackRedelivered(t *testing.T, b *bundle) {
	ps := b.instance()
	rec := newRecorder(func(msg *pubsub.Message) error {
		if msg.Attempt == 1 {
			return errors.New("transient failure")
		}
		return nil
	})
	msg := &pubsub.Message{Body: []byte("retry me"), Headers: map[string]string{"trace": "t1"}}
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchorLinkset, msg))
	subscribe(t, ps, pubsub.TopicAnchorLinkset, 1, rec.handle)

	first := rec.next(t)
	second := rec.next(t)
	require.Equal(t, 1, first.msg.Attempt)
	require.Equal(t, 2, second.msg.Attempt)
	require.Equal(t, msg.ID, second.msg.ID)
	require.Equal(t, "retry me", string(second.msg.Body))
	require.Equal(t, "t1", second.msg.Headers["trace"], "headers survive redelivery")
	require.Less(t, second.at.Sub(first.at), Schedule.Delay(1)+b.features.Slack, "the first rejection is redelivered at once")
	rec.requireNone(t, 2*Schedule.InitialInterval, "an acked message is not redelivered")
}

// testBackoffThenPark: a message that always fails is redelivered after Delay(n), then parked
// with its reason and history after MaxAttempts deliveries, and never delivered again.
func testBackoffThenPark(t *testing.T, b *bundle) {
	ps := b.instance()
	rec := newRecorder(func(msg *pubsub.Message) error {
		return fmt.Errorf("boom %d", msg.Attempt)
	})
	msg := &pubsub.Message{Body: []byte("doomed"), Headers: map[string]string{"k": "v"}}
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicActivityInbox, msg))
	subscribe(t, ps, pubsub.TopicActivityInbox, 1, rec.handle)

	var prev time.Time
	for attempt := 1; attempt <= Schedule.MaxAttempts; attempt++ {
		d := rec.next(t)
		require.Equal(t, attempt, d.msg.Attempt)
		require.Equal(t, msg.ID, d.msg.ID)
		if attempt > 1 {
			want := Schedule.Delay(attempt - 1)
			gap := d.at.Sub(prev)
			require.GreaterOrEqual(t, gap, want-earlyTolerance, "attempt %d came %s after the previous one, want %s", attempt, gap, want)
			require.Less(t, gap, want+b.features.Slack, "attempt %d came %s after the previous one, want %s", attempt, gap, want)
		}
		prev = d.at
	}

	p := b.nextParked()
	require.Equal(t, msg.ID, p.Message.ID)
	require.Equal(t, "doomed", string(p.Message.Body))
	require.Equal(t, "v", p.Message.Headers["k"])
	require.Equal(t, pubsub.TopicActivityInbox, p.Topic)
	require.Equal(t, Schedule.MaxAttempts, p.Attempts)
	require.Contains(t, p.Reason, fmt.Sprintf("boom %d", Schedule.MaxAttempts))
	require.Len(t, p.History, Schedule.MaxAttempts)
	for i, line := range p.History {
		require.Contains(t, line, fmt.Sprintf("attempt %d", i+1))
		require.Contains(t, line, fmt.Sprintf("boom %d", i+1))
	}
	require.False(t, p.ParkedAt.IsZero())
	rec.requireNone(t, 3*Schedule.MaxInterval, "a parked message is not delivered again")
}

// testPermanentParksAtOnce: Permanent(err) parks after one delivery.
func testPermanentParksAtOnce(t *testing.T, b *bundle) {
	ps := b.instance()
	rec := newRecorder(func(*pubsub.Message) error {
		return fmt.Errorf("decode: %w", pubsub.Permanent(errors.New("bad payload")))
	})
	msg := message("poison")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicActivityOutbox, msg))
	subscribe(t, ps, pubsub.TopicActivityOutbox, 1, rec.handle)

	d := rec.next(t)
	require.Equal(t, 1, d.msg.Attempt)
	p := b.nextParked()
	require.Equal(t, msg.ID, p.Message.ID)
	require.Equal(t, 1, p.Attempts)
	require.Contains(t, p.Reason, "bad payload")
	require.Len(t, p.History, 1)
	rec.requireNone(t, 2*Schedule.MaxInterval, "a permanently failed message is not retried")
}

// testParkFuncFailureRetried: the implementation keeps a parked message until ParkFunc returns
// nil.
func testParkFuncFailureRetried(t *testing.T, b *bundle) {
	var calls atomic.Int32
	cfg := b.config()
	cfg.ParkFunc = func(_ context.Context, p pubsub.Parked) error {
		if calls.Add(1) <= 2 {
			return errors.New("dead-letter store down")
		}
		b.parked <- p
		return nil
	}
	ps := b.newPubSub(t, cfg)
	rec := newRecorder(func(*pubsub.Message) error { return pubsub.Permanent(errors.New("reject")) })
	msg := message("keep me")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicOperation, msg))
	subscribe(t, ps, pubsub.TopicOperation, 1, rec.handle)

	p := b.nextParked()
	require.Equal(t, msg.ID, p.Message.ID)
	require.EqualValues(t, 3, calls.Load())
	require.Equal(t, 1, len(rec.ch), "handled once")
}

// testParkedRepublish: Parked.Republish puts a parked message back on its topic, starting
// again at attempt 1.
func testParkedRepublish(t *testing.T, b *bundle) {
	ps := b.instance()
	var fail atomic.Bool
	fail.Store(true)
	rec := newRecorder(func(*pubsub.Message) error {
		if fail.Load() {
			return pubsub.Permanent(errors.New("not yet"))
		}
		return nil
	})
	msg := message("second chance")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchor, msg))
	subscribe(t, ps, pubsub.TopicAnchor, 1, rec.handle)
	require.Equal(t, 1, rec.next(t).msg.Attempt)
	p := b.nextParked()

	fail.Store(false)
	require.NoError(t, p.Republish(b.ctx(), ps))
	d := rec.next(t)
	require.Equal(t, msg.ID, d.msg.ID)
	require.Equal(t, 1, d.msg.Attempt)
	require.Equal(t, "second chance", string(d.msg.Body))
}

// testDelayedPublish: a delayed message is not delivered before its delay has passed since its
// publish began, and is delivered within Features.Slack of its delay having passed since its
// publish returned, whatever else waits: messages published after one with a far longer delay,
// delayed or not, are not held behind it (as in a queue that expires only its head).
//
// No order is asserted between the messages that do arrive: the contract orders deliveries only
// through those bounds, and theirs overlap. An immediate message published after a 200 ms delay
// may well arrive after it when the publishes are slow to be confirmed, as on a loaded machine;
// the far message's bounds are the ones that cannot overlap the others'.
func testDelayedPublish(t *testing.T, b *bundle) {
	ps := b.instance()
	rec := newRecorder(nil)
	subscribe(t, ps, pubsub.TopicAnchorLinkset, 3, rec.handle)
	ctx := b.ctx()

	type sent struct {
		body             string
		start, confirmed time.Time
		delay            time.Duration
	}
	const farDelay = 4 * waitTimeout // longer than the scenario can last
	far := message("far")
	sentAt := map[string]sent{}
	for _, c := range []struct {
		msg   *pubsub.Message
		delay time.Duration
	}{{far, farDelay}, {message("long"), 700 * time.Millisecond}, {message("short"), 200 * time.Millisecond}, {message("now"), 0}} {
		start := time.Now()
		if c.delay > 0 {
			require.NoError(t, ps.PublishDelayed(ctx, pubsub.TopicAnchorLinkset, c.delay, c.msg))
		} else {
			require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchorLinkset, c.msg))
		}
		sentAt[c.msg.ID] = sent{body: string(c.msg.Body), start: start, confirmed: time.Now(), delay: c.delay}
	}

	for range 3 {
		d := rec.next(t)
		s, ok := sentAt[d.msg.ID]
		require.True(t, ok, "message %s (%s) delivered twice", d.msg.ID, d.msg.Body)
		delete(sentAt, d.msg.ID)
		require.Equal(t, 1, d.msg.Attempt)
		early := d.at.Sub(s.start)
		require.GreaterOrEqual(t, early, s.delay-earlyTolerance, "%s arrived %s after its publish began, before its delay of %s", s.body, early, s.delay)
		if s.delay == 0 {
			// An immediate message's latency is the machine's, not a delay's: nothing bounds it
			// but the wait for a delivery, and arriving while far waits shows it was not held.
			continue
		}
		late := d.at.Sub(s.confirmed)
		require.Less(t, late, s.delay+b.features.Slack, "%s arrived %s after its publish returned, want about %s", s.body, late, s.delay)
	}
	require.Len(t, sentAt, 1)
	require.Contains(t, sentAt, far.ID, "only the far message still waits")
}
