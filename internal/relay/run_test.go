package relay

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// TestLoopsRunUntilCancelled runs the Publisher and the Receiver's sweep as the daemon does: the
// publisher posts an anchor once it is indexed, and the sweep applies a waiting anchor once its
// parent arrives, each woken without a poll.
func TestLoopsRunUntilCancelled(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t))
	b.follow(a)
	a.pub.cfg.PollInterval = time.Hour
	b.recv.cfg.PollInterval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, a.pub.Run(ctx)) })
	wg.Go(func() { assert.NoError(t, b.recv.Run(ctx)) })
	defer func() {
		cancel()
		wg.Wait()
	}()

	w := wallet.New(wallet.Config{})
	x, create, err := w.Create()
	require.NoError(t, err)
	a.anchorOps(create)
	a.pub.Notify()
	first := a.pub.signal.WaitOrTimeout(t, 5*time.Second)
	require.NotZero(t, first.Seq)
	update, err := w.Update(x)
	require.NoError(t, err)
	a.anchorOps(update)
	a.pub.Notify()
	second := a.pub.signal.WaitOrTimeout(t, 5*time.Second)
	require.Greater(t, second.Seq, first.Seq)
	creates := a.sent()
	require.Len(t, creates, 2)

	require.NoError(t, b.deliver(a, creates[1], true))
	require.Equal(t, outcomeWaiting, b.recv.signal.WaitOrTimeout(t, 5*time.Second).Outcome)
	require.NoError(t, b.deliver(a, creates[0], true))
	require.Equal(t, outcomeApplied, b.recv.signal.WaitOrTimeout(t, 5*time.Second).Outcome)
	// The sweep, woken by the apply, takes the waiting child.
	child := b.recv.signal.WaitOrTimeout(t, 5*time.Second)
	require.Equal(t, outcomeApplied, child.Outcome)
	require.Equal(t, second.Hashlink, child.Hashlink)
	sameState(t, a.state(x.Suffix), b.state(x.Suffix))
}
