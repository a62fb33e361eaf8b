package amqppubsub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
)

// TestDrainParked: without a ParkFunc parked messages stay in the parked queue; DrainParked
// hands them over (acking only accepted ones) and Republish sends one back to its topic.
func TestDrainParked(t *testing.T) {
	t.Parallel()
	cfg := Config{URL: anchordtest.AMQPURL(t), Prefix: testPrefix(t)}
	removeOnCleanup(t, cfg)
	ps := startPubSub(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var retried = make(chan *pubsub.Message, 1)
	done := make(chan error, 1)
	go func() {
		done <- ps.Subscribe(ctx, pubsub.TopicAnchor, 1, func(_ context.Context, msg *pubsub.Message) error {
			if msg.Headers["retry"] == "" {
				return pubsub.Permanent(errors.New("rejected for the test"))
			}
			retried <- msg
			return nil
		})
	}()
	msg := &pubsub.Message{Body: []byte("park me"), Headers: map[string]string{"k": "v"}}
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, msg))

	// The broker offers no signal for "a message arrived in a queue nobody consumes": poll it.
	refuse := func(context.Context, pubsub.Parked) error { return errors.New("not now") }
	anchordtest.Eventually(t, waitTimeoutTest, 20*time.Millisecond, func() bool {
		_, err := ps.DrainParked(ctx, 1, refuse)
		return err != nil
	}, "message parked")

	var got []pubsub.Parked
	n, err := ps.DrainParked(ctx, 10, func(_ context.Context, p pubsub.Parked) error {
		got = append(got, p)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 1, n, "the refused message stayed parked")
	p := got[0]
	require.Equal(t, msg.ID, p.Message.ID)
	require.Equal(t, pubsub.TopicAnchor, p.Topic)
	require.Equal(t, 1, p.Attempts)
	require.Contains(t, p.Reason, "rejected for the test")
	require.Equal(t, "v", p.Message.Headers["k"])

	n, err = ps.DrainParked(ctx, 10, refuse)
	require.NoError(t, err)
	require.Zero(t, n, "accepted messages were acked")

	p.Message.Headers["retry"] = "yes"
	require.NoError(t, p.Republish(ctx, ps))
	again := anchordtest.WaitOrTimeout(t, retried, waitTimeoutTest)
	require.Equal(t, msg.ID, again.ID)
	require.Equal(t, 1, again.Attempt)
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, waitTimeoutTest))
}
