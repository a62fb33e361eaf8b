package mempubsub

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

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	parked := make(chan pubsub.Parked, 1)
	ps, err := New(Config{
		Redelivery: pubsubtest.Schedule,
		Registerer: reg,
		ParkFunc: func(_ context.Context, p pubsub.Parked) error {
			parked <- p
			return nil
		},
	})
	require.NoError(t, err)
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
	require.Equal(t, 3, anchordtest.WaitOrTimeout(t, parked, 10*time.Second).Attempts)
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))

	m := newMetrics(reg)
	topic := pubsub.TopicAnchorLinkset
	require.Equal(t, 3.0, testutil.ToFloat64(m.published.WithLabelValues(topic)))
	require.Equal(t, 3.0, testutil.ToFloat64(m.delivered.WithLabelValues(topic)))
	require.Equal(t, 3.0, testutil.ToFloat64(m.nacked.WithLabelValues(topic)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.redelivered.WithLabelValues(topic, "0s")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.redelivered.WithLabelValues(topic, "100ms")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.parked.WithLabelValues(topic)))
}
