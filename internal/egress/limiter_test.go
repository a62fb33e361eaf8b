package egress

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestLimiterForgetsIdleHostsAndReleasesOnce(t *testing.T) {
	t.Parallel()
	m, err := newMetrics(nil)
	require.NoError(t, err)
	l := newLimiter(3, 2, m)
	ctx := context.Background()
	r1, err := l.acquire(ctx, "a.example:443")
	require.NoError(t, err)
	r2, err := l.acquire(ctx, "a.example:443")
	require.NoError(t, err)
	r3, err := l.acquire(ctx, "b.example:443")
	require.NoError(t, err)
	require.Equal(t, 3.0, testutil.ToFloat64(m.inFlight))

	// a.example is at its cap and the global cap is reached: both waits end with their context.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = l.acquire(short, "a.example:443")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	short2, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel2()
	_, err = l.acquire(short2, "c.example:443")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1.0, testutil.ToFloat64(m.slotTimeouts.WithLabelValues("host")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.slotTimeouts.WithLabelValues("global")))

	r1()
	r1() // a second call gives nothing back twice
	require.Equal(t, 2.0, testutil.ToFloat64(m.inFlight))
	r2()
	r3()
	require.Zero(t, testutil.ToFloat64(m.inFlight))
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.hosts, "a host's entry lives only while a request holds or awaits its slots")
	require.Zero(t, len(l.global))
}
