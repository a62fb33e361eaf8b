package pubsubtest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/pubsub"
)

// blocker is a handler that reports each entry on entered and then waits for release (or the
// end of its context) before returning ctx.Err() or nil.
type blocker struct {
	entered chan *pubsub.Message
	release chan struct{}
	calls   atomic.Int32
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan *pubsub.Message, 100), release: make(chan struct{})}
}

func (bl *blocker) handle(ctx context.Context, msg *pubsub.Message) error {
	bl.calls.Add(1)
	m := *msg
	bl.entered <- &m
	select {
	case <-bl.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (bl *blocker) next(t *testing.T) *pubsub.Message {
	t.Helper()
	select {
	case m := <-bl.entered:
		return m
	case <-time.After(waitTimeout):
		t.Fatalf("no handler entered within %s", waitTimeout)
	}
	return nil
}

// testPoolRunsConcurrently: a pool of N runs N handlers at once.
func testPoolRunsConcurrently(t *testing.T, b *bundle) {
	const pool = 5
	ps := b.instance()
	bl := newBlocker()
	for range pool {
		require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicOperation, message("concurrent")))
	}
	subscribe(t, ps, pubsub.TopicOperation, pool, bl.handle)
	seen := map[string]bool{}
	for range pool {
		seen[bl.next(t).ID] = true // all N are in their handlers at the same time
	}
	require.Len(t, seen, pool)
	close(bl.release)
}

// testNoAckBlocksNextDelivery: with a pool of one, a handler that has not returned holds back
// the next message; it is delivered once the first is acked.
func testNoAckBlocksNextDelivery(t *testing.T, b *bundle) {
	ps := b.instance()
	bl := newBlocker()
	subscribe(t, ps, pubsub.TopicAnchor, 1, bl.handle)
	first, second := message("first"), message("second")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchor, first))
	require.Equal(t, first.ID, bl.next(t).ID)
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchor, second))

	select {
	case m := <-bl.entered:
		t.Fatalf("message %q delivered while the only slot was busy", m.Body)
	case <-time.After(300 * time.Millisecond):
	}
	close(bl.release)
	require.Equal(t, second.ID, bl.next(t).ID)
}

// testBlockedHandlerDoesNotBlockOtherSlot: with a pool of two, one stuck handler leaves the
// other slot free.
func testBlockedHandlerDoesNotBlockOtherSlot(t *testing.T, b *bundle) {
	ps := b.instance()
	stuck := make(chan struct{})
	defer close(stuck)
	got := make(chan string, 10)
	subscribe(t, ps, pubsub.TopicAnchor, 2, func(ctx context.Context, msg *pubsub.Message) error {
		got <- string(msg.Body)
		if string(msg.Body) == "stuck" {
			select {
			case <-stuck:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchor, message("stuck")))
	require.Equal(t, "stuck", anchordWait(t, got))
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchor, message("free")))
	require.Equal(t, "free", anchordWait(t, got))
}

func anchordWait(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("nothing received within %s", waitTimeout)
	}
	return ""
}

// testCancelDrainsInFlight: cancelling Subscribe's context waits for in-flight handlers, whose
// result still counts (the drained message is acked, not redelivered).
func testCancelDrainsInFlight(t *testing.T, b *bundle) {
	ps := b.instance()
	bl := newBlocker()
	sub := subscribe(t, ps, pubsub.TopicActivityInbox, 1, bl.handle)
	inflight := message("in flight")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicActivityInbox, inflight))
	require.Equal(t, inflight.ID, bl.next(t).ID)

	sub.cancel()
	select {
	case err := <-sub.done:
		t.Fatalf("Subscribe returned (%v) while a handler was in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(bl.release)
	sub.stop(t)

	// The drained message was acked: a new subscription sees only what comes after it.
	after := message("after")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicActivityInbox, after))
	rec := newRecorder(nil)
	subscribe(t, ps, pubsub.TopicActivityInbox, 1, rec.handle)
	require.Equal(t, after.ID, rec.next(t).msg.ID)
	rec.requireNone(t, 300*time.Millisecond, "the drained message was acked")
}

// testDrainTimeoutPutsMessageBack: a handler still running when the drain timeout ends has its
// context cancelled; its message goes back to the queue without using up an attempt.
func testDrainTimeoutPutsMessageBack(t *testing.T, b *bundle) {
	cfg := b.config()
	cfg.DrainTimeout = 200 * time.Millisecond
	ps := b.newPubSub(t, cfg)
	bl := newBlocker() // never released: returns ctx.Err() when the drain timeout cancels it
	sub := subscribe(t, ps, pubsub.TopicAnchorLinkset, 1, bl.handle)
	msg := message("interrupted")
	require.NoError(t, ps.Publish(b.ctx(), pubsub.TopicAnchorLinkset, msg))
	require.Equal(t, msg.ID, bl.next(t).ID)
	start := time.Now()
	sub.stop(t)
	require.GreaterOrEqual(t, time.Since(start), cfg.DrainTimeout-earlyTolerance)

	rec := newRecorder(nil)
	subscribe(t, ps, pubsub.TopicAnchorLinkset, 1, rec.handle)
	d := rec.next(t)
	require.Equal(t, msg.ID, d.msg.ID)
	require.Equal(t, 1, d.msg.Attempt, "an interrupted delivery does not count as an attempt")
}
