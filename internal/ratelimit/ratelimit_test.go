package ratelimit

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

func newTestRateLimiter(perSecond float64, burst, maxClients int) (*Keyed, *anchordtest.Clock) {
	l := New(perSecond, burst, maxClients)
	c := anchordtest.NewClock()
	l.now = c.Now
	return l, c
}

func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	l, clock := newTestRateLimiter(2, 3, 10) // 2/s, bursts of 3
	for range 3 {
		ok, _ := l.Allow("a")
		require.True(t, ok)
	}
	ok, wait := l.Allow("a")
	require.False(t, ok)
	require.InDelta(t, float64(500*time.Millisecond), float64(wait), float64(time.Microsecond), "one token every 500ms")
	ok, _ = l.Allow("b")
	require.True(t, ok, "clients have their own buckets")

	clock.Advance(499 * time.Millisecond)
	ok, wait = l.Allow("a")
	require.False(t, ok)
	require.InDelta(t, float64(time.Millisecond), float64(wait), float64(time.Microsecond))
	clock.Advance(time.Millisecond)
	ok, _ = l.Allow("a")
	require.True(t, ok)
}

func TestRateLimiterMemoryIsBounded(t *testing.T) {
	t.Parallel()
	l, clock := newTestRateLimiter(1, 2, 100) // a bucket refills in 2s
	for i := range 10_000 {
		l.Allow("c" + strconv.Itoa(i))
		require.LessOrEqual(t, l.Len(), 100)
	}
	require.Equal(t, 100, l.Len())

	// Untracked clients share one bucket of one client's size: two requests, then none.
	ok, _ := l.Allow("newcomer")
	require.False(t, ok, "the 9,900 untracked clients used the shared bucket up")

	// Once tracked clients have been idle for a refill, a sweep forgets them and newcomers get
	// their own buckets again.
	clock.Advance(2 * time.Second)
	ok, _ = l.Allow("newcomer")
	require.True(t, ok)
	require.Equal(t, 1, l.Len(), "the idle clients were forgotten")

	// An active client is kept, and stays limited.
	for range 2 {
		ok, _ = l.Allow("newcomer")
	}
	require.False(t, ok)
	clock.Advance(time.Second)
	for i := range 100 {
		l.Allow("d" + strconv.Itoa(i))
	}
	ok, _ = l.Allow("newcomer")
	require.True(t, ok, "one token refilled in the second")
	ok, _ = l.Allow("newcomer")
	require.False(t, ok, "the active client kept its bucket through the sweep")
}
