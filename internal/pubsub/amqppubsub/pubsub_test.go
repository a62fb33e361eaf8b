package amqppubsub

import (
	"sync"
	"testing"
	"time"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/pubsubtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	url := anchordtest.AMQPURL(t)
	for _, variant := range []struct {
		name  string
		qt    QueueType
		slots int
	}{
		{"classic", QueueClassic, 0},
		{"quorum", QueueQuorum, 0},
		{"classic/channel-per-slot", QueueClassic, 1},
	} {
		t.Run(variant.name, func(t *testing.T) {
			t.Parallel()
			var namespaces sync.Map
			pubsubtest.Exercise(t, pubsubtest.Features{Persistent: true, Slack: time.Second}, func(t *testing.T, sc pubsubtest.Config) pubsub.PubSub {
				cfg := Config{
					URL:                    url,
					Prefix:                 "anchordtest-" + sc.Namespace,
					QueueType:              variant.qt,
					SubscriberChannelSlots: variant.slots,
					Redelivery:             sc.Redelivery,
					ParkFunc:               sc.ParkFunc,
					DrainTimeout:           sc.DrainTimeout,
				}
				if _, loaded := namespaces.LoadOrStore(sc.Namespace, true); !loaded {
					removeOnCleanup(t, cfg)
				}
				return startPubSub(t, cfg)
			})
		})
	}
}
