package amqppubsub

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
)

// TestConnectionChannelLimit: past MaxConnectionChannels channels a role opens another
// connection, and everything still flows.
func TestConnectionChannelLimit(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cfg := Config{
		URL:                      anchordtest.AMQPURL(t),
		Prefix:                   testPrefix(t),
		MaxConnectionChannels:    2,
		PublisherChannelPoolSize: 4,
		SubscriberChannelSlots:   1,
		Registerer:               reg,
	}
	removeOnCleanup(t, cfg)
	ps := startPubSub(t, cfg)
	m := newMetrics(reg)

	const pool, n = 5, 40
	got := make(chan string, n)
	entered := make(chan struct{}, n)
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ps.Subscribe(ctx, pubsub.TopicAnchor, pool, func(ctx context.Context, msg *pubsub.Message) error {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			got <- msg.ID
			return nil
		})
	}()
	// Four concurrent publishes need four publisher channels: two connections.
	pubErrs := make(chan error, n)
	for range n {
		go func() {
			pubErrs <- ps.Publish(context.Background(), pubsub.TopicAnchor, &pubsub.Message{Body: []byte("x")})
		}()
	}
	for range n {
		require.NoError(t, anchordtest.WaitOrTimeout(t, pubErrs, waitTimeoutTest))
	}
	// All five slots busy at once: five subscriber channels, two per connection, plus the
	// redelivery router's channel (Run): four consumer connections.
	for range pool {
		anchordtest.WaitOrTimeout(t, entered, waitTimeoutTest)
	}
	require.GreaterOrEqual(t, testutil.ToFloat64(m.connections.WithLabelValues(roleConsumer)), 3.0)
	require.GreaterOrEqual(t, testutil.ToFloat64(m.connections.WithLabelValues(rolePublisher)), 2.0)
	close(release)
	seen := map[string]bool{}
	for range n {
		seen[anchordtest.WaitOrTimeout(t, got, waitTimeoutTest)] = true
	}
	require.Len(t, seen, n)
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, waitTimeoutTest))
}
