package mempubsub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
)

// TestBrokerKeepsParked: without a ParkFunc a parked message stays in the Broker.
func TestBrokerKeepsParked(t *testing.T) {
	t.Parallel()
	b := NewBroker()
	ps, err := New(Config{Broker: b})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	handled := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- ps.Subscribe(ctx, pubsub.TopicAnchor, 1, func(context.Context, *pubsub.Message) error {
			handled <- struct{}{}
			return pubsub.Permanent(errors.New("no"))
		})
	}()
	msg := &pubsub.Message{Body: []byte("x")}
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, msg))
	anchordtest.WaitOrTimeout(t, handled, 10*time.Second)
	cancel() // the drain waits for the handler, which parks before returning to the slot
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))

	parked := b.Parked()
	require.Len(t, parked, 1)
	require.Equal(t, msg.ID, parked[0].Message.ID)
	require.Equal(t, pubsub.TopicAnchor, parked[0].Topic)
	require.Zero(t, b.Len(pubsub.TopicAnchor))
}
