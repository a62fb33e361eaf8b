package mempubsub

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		brokers = map[string]*Broker{}
	)
	pubsubtest.Exercise(t, pubsubtest.Features{Persistent: false}, func(t *testing.T, cfg pubsubtest.Config) pubsub.PubSub {
		mu.Lock()
		b, ok := brokers[cfg.Namespace]
		if !ok {
			b = NewBroker()
			brokers[cfg.Namespace] = b
		}
		mu.Unlock()
		ps, err := New(Config{
			Broker:       b,
			Redelivery:   cfg.Redelivery,
			ParkFunc:     cfg.ParkFunc,
			DrainTimeout: cfg.DrainTimeout,
			Logger:       anchordtest.Logger(t),
		})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ps.Close()) })
		return ps
	})
}
