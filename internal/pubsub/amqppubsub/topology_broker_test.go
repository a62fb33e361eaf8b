package amqppubsub

import (
	"context"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
)

// TestQueueDeletedUnderUs: when a topic queue disappears from a broker we stay connected to,
// Publish and Subscribe declare the topology again instead of failing for good.
func TestQueueDeletedUnderUs(t *testing.T) {
	t.Parallel()
	cfg := Config{URL: anchordtest.AMQPURL(t), Prefix: testPrefix(t)}
	removeOnCleanup(t, cfg)
	ps := startPubSub(t, cfg)
	got := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ps.Subscribe(ctx, pubsub.TopicAnchorLinkset, 1, func(_ context.Context, msg *pubsub.Message) error {
			got <- string(msg.Body)
			return nil
		})
	}()
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchorLinkset, &pubsub.Message{Body: []byte("before")}))
	require.Equal(t, "before", anchordtest.WaitOrTimeout(t, got, waitTimeoutTest))

	conn, err := amqp.Dial(cfg.URL)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDelete(ps.topo.queues[pubsub.TopicAnchorLinkset], false, false, false)
	require.NoError(t, err)

	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchorLinkset, &pubsub.Message{Body: []byte("after")}))
	require.Equal(t, "after", anchordtest.WaitOrTimeout(t, got, waitTimeoutTest))
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, waitTimeoutTest))
}
