package amqppubsub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/pubsubtest"
)

// TestMetrics: a message that fails twice (at once, then through the 100 ms tier), then
// permanently, shows up in every counter with its topic and tier labels.
func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	parkedCh := make(chan pubsub.Parked, 1)
	cfg := Config{
		URL:        anchordtest.AMQPURL(t),
		Prefix:     testPrefix(t),
		Redelivery: pubsubtest.Schedule,
		Registerer: reg,
		ParkFunc: func(_ context.Context, p pubsub.Parked) error {
			parkedCh <- p
			return nil
		},
	}
	removeOnCleanup(t, cfg)
	ps := startPubSub(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ps.Subscribe(ctx, pubsub.TopicAnchorLinkset, 1, func(_ context.Context, msg *pubsub.Message) error {
			if msg.Attempt < 3 {
				return errors.New("again")
			}
			return pubsub.Permanent(errors.New("give up"))
		})
	}()
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchorLinkset, &pubsub.Message{Body: []byte("m")}))
	p := anchordtest.WaitOrTimeout(t, parkedCh, waitTimeoutTest)
	require.Equal(t, 3, p.Attempts)
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, waitTimeoutTest))

	m := newMetrics(reg)
	topic := pubsub.TopicAnchorLinkset
	want := []struct {
		name string
		c    prometheus.Collector
		v    float64
	}{
		// The publish and the two forwards back to the topic queue (at once, then after the wait).
		{"published", m.published.WithLabelValues(topic), 3},
		{"confirmed", m.confirmed.WithLabelValues(topic), 3},
		{"published wait", m.published.WithLabelValues("wait"), 1},
		{"published parked", m.published.WithLabelValues("parked"), 1},
		{"published failure reports", m.published.WithLabelValues("redelivery"), 3},
		{"delivered", m.delivered.WithLabelValues(topic), 3},
		{"nacked", m.nacked.WithLabelValues(topic), 3},
		{"acked", m.acked.WithLabelValues(topic), 0},
		{"redelivered at once", m.redelivered.WithLabelValues(topic, "0s"), 1},
		{"redelivered after 100ms", m.redelivered.WithLabelValues(topic, "100ms"), 1},
		{"parked", m.parked.WithLabelValues(topic), 1},
		{"publisher connection up", m.connectionUp.WithLabelValues(rolePublisher), 1},
	}
	// Confirms reach the publisher independently of deliveries: the last counters can lag
	// the ParkFunc call by a moment.
	anchordtest.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		for _, w := range want {
			if testutil.ToFloat64(w.c) != w.v {
				return false
			}
		}
		return true
	}, "metrics")
	require.Equal(t, uint64(3), anchordtest.HistogramCount(t, reg, "anchord_pubsub_handler_duration_seconds"))
}
