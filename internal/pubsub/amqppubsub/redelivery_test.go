package amqppubsub

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/pubsubtest"
)

func TestRouterNext(t *testing.T) {
	t.Parallel()
	cfg := Config{URL: "amqp://x", Prefix: "p", Redelivery: pubsubtest.Schedule, Logger: anchordtest.Logger(t)}.withDefaults()
	r := &router{ps: &PubSub{cfg: cfg, topo: newTopology(cfg), log: cfg.Logger, metrics: newMetrics(nil)}}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	delivery := func(h amqp.Table) *amqp.Delivery {
		h["app"] = "kept"
		h["x-death"] = []any{amqp.Table{"count": int64(1)}}
		return &amqp.Delivery{MessageId: "m1", Body: []byte("b"), Headers: h}
	}

	t.Run("first failure goes back at once", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: pubsub.TopicAnchorLinkset, hdrAttempt: int32(1), hdrFailure: "e1"}), now)
		require.Equal(t, "p.anchor_linkset", q)
		require.EqualValues(t, 2, pub.Headers[hdrAttempt])
		require.Len(t, pub.Headers[hdrHistory], 1)
		require.Contains(t, pub.Headers[hdrHistory].([]any)[0], "attempt 1: e1")
		require.NotContains(t, pub.Headers, hdrFailure)
		require.NotContains(t, pub.Headers, "x-death")
		require.Equal(t, "kept", pub.Headers["app"])
		require.Equal(t, "m1", pub.MessageId)
		require.Equal(t, uint8(amqp.Persistent), pub.DeliveryMode)
	})
	t.Run("later failure waits in its tier", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: pubsub.TopicAnchorLinkset, hdrAttempt: int32(3), hdrFailure: "e3",
			hdrHistory: []any{"one", "two"}}), now)
		require.Equal(t, "p.delay.200ms", q) // Delay(3) = 200 ms
		require.EqualValues(t, 4, pub.Headers[hdrAttempt])
		require.Equal(t, stageWait, pub.Headers[hdrStage])
		require.Equal(t, now.Add(200*time.Millisecond).UnixMilli(), pub.Headers[hdrDeliverAt])
		require.Len(t, pub.Headers[hdrHistory], 3)
	})
	t.Run("last attempt parks", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: pubsub.TopicAnchorLinkset, hdrAttempt: int32(5), hdrFailure: "e5"}), now)
		require.Equal(t, "p.parked", q)
		require.Contains(t, pub.Headers[hdrReason], "failed 5 attempts, last: e5")
		require.EqualValues(t, 5, pub.Headers[hdrAttempt])
		require.Equal(t, now.UnixMilli(), pub.Headers[hdrParkedAt])
		p := parked(&amqp.Delivery{MessageId: pub.MessageId, Headers: pub.Headers, Body: pub.Body})
		require.Equal(t, pubsub.TopicAnchorLinkset, p.Topic)
		require.Equal(t, 5, p.Attempts)
		require.Equal(t, "kept", p.Message.Headers["app"])
	})
	t.Run("permanent parks", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: pubsub.TopicAnchorLinkset, hdrAttempt: int32(1), hdrFailure: "bad", hdrPermanent: true}), now)
		require.Equal(t, "p.parked", q)
		require.Equal(t, "bad", pub.Headers[hdrReason])
	})
	t.Run("dead-lettered without our headers", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{"x-first-death-queue": "p.anchor", "x-first-death-reason": "rejected"}), now)
		require.Equal(t, "p.anchor", q)
		require.EqualValues(t, 2, pub.Headers[hdrAttempt])
		require.Contains(t, pub.Headers[hdrHistory].([]any)[0], "rejected without a reason (rejected)")
	})
	t.Run("due waiting message is forwarded", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: pubsub.TopicAnchorLinkset, hdrAttempt: int32(2), hdrStage: stageWait,
			hdrDeliverAt: now.Add(-time.Millisecond).UnixMilli()}), now)
		require.Equal(t, "p.anchor_linkset", q)
		require.EqualValues(t, 2, pub.Headers[hdrAttempt])
		require.NotContains(t, pub.Headers, hdrStage)
		require.NotContains(t, pub.Headers, hdrDeliverAt)
	})
	t.Run("waiting message not yet due takes another hop", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: pubsub.TopicAnchorLinkset, hdrStage: stageWait,
			hdrDeliverAt: now.Add(700 * time.Millisecond).UnixMilli()}), now)
		require.Equal(t, "p.delay.300ms", q)
		require.Equal(t, stageWait, pub.Headers[hdrStage])
	})
	t.Run("unknown topic parks", func(t *testing.T) {
		t.Parallel()
		q, _, pub := r.next(delivery(amqp.Table{hdrTopic: "gone", hdrFailure: "e"}), now)
		require.Equal(t, "p.parked", q)
		require.Contains(t, pub.Headers[hdrReason], `no destination topic "gone"`)
	})
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{URL: "amqp://localhost"}.withDefaults().validate())
	err := Config{QueueType: "stream", PublisherChannelPoolSize: -1, DrainTimeout: -time.Second}.withDefaults().validate()
	require.ErrorContains(t, err, "URL is empty")
	require.ErrorContains(t, err, `queue type "stream"`)
	require.ErrorContains(t, err, "publisher channel pool size -1")
	require.ErrorContains(t, err, "drain timeout -1s is negative")
}
