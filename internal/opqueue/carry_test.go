package opqueue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/mempubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store/storetest"
)

// parsedOp is opFor(i) with a stand-in for intake's parse.
func parsedOp(i int) NewOp {
	op := opFor(i)
	op.Parsed = &sidetree.Operation{Suffix: op.Suffix, Request: op.Request}
	return op
}

func TestParseComesBackToTheAcceptingInstance(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	broker := mempubsub.NewBroker(pubsub.Topics...)
	a := startNode(t, st, broker, "a", true)
	ctx := context.Background()
	want := parsedOp(1)
	require.NoError(t, a.b.Add(ctx, want))
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return a.q.Len() == 1 })
	got := a.q.Peek(1)
	require.Same(t, want.Parsed, got[0].Parsed, "the batch writer gets intake's parse")
	a.b.carry.mu.Lock()
	defer a.b.carry.mu.Unlock()
	require.Empty(t, a.b.carry.cur, "taken")
}

func TestParseStaysWithItsInstance(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	broker := mempubsub.NewBroker(pubsub.Topics...)
	a := startNode(t, st, broker, "a", false) // only publishes
	b := startNode(t, st, broker, "b", true)
	require.NoError(t, a.b.Add(context.Background(), parsedOp(1)))
	anchordtest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return b.q.Len() == 1 })
	require.Nil(t, b.q.Peek(1)[0].Parsed, "another instance parses it again")
}

func TestCarryKeepsTwoGenerationsAndOnlyExactRequests(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	c := newCarry(func() time.Time { return now })
	op := &sidetree.Operation{Request: []byte(`{"n":1}`)}
	c.put("one", op)
	require.Nil(t, c.take("one", []byte(`{"n":2}`)), "a parse of other bytes is never used")
	require.Nil(t, c.take("one", op.Request), "a take forgets")

	c.put("one", op)
	now = now.Add(carryKeep)
	c.put("two", op) // starts a generation; "one" is in the previous one
	require.Same(t, op, c.take("one", op.Request))
	c.put("three", op)
	now = now.Add(carryKeep)
	c.put("four", op)
	now = now.Add(carryKeep)
	c.put("five", op) // "two" and "three" were two generations ago
	require.Nil(t, c.take("two", op.Request))
	require.Nil(t, c.take("three", op.Request))
	require.Same(t, op, c.take("four", op.Request))

	for i := range carryMax + 1 {
		c.put(string(rune('a'+i%26))+time.Duration(i).String(), op)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.LessOrEqual(t, len(c.cur), carryMax)
	require.LessOrEqual(t, len(c.prev), carryMax)
}
