package httpapi

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// fakeClock is a rate limiter's clock that moves only when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestRateLimiter(perSecond float64, burst, maxClients int) (*rateLimiter, *fakeClock) {
	l := newRateLimiter(perSecond, burst, maxClients)
	c := &fakeClock{t: time.Unix(1_000_000, 0)}
	l.now = c.now
	return l, c
}

func TestRateLimiterBucket(t *testing.T) {
	t.Parallel()
	l, clock := newTestRateLimiter(2, 3, 10) // 2/s, bursts of 3
	for range 3 {
		ok, _ := l.allow("a")
		require.True(t, ok)
	}
	ok, wait := l.allow("a")
	require.False(t, ok)
	require.InDelta(t, float64(500*time.Millisecond), float64(wait), float64(time.Microsecond), "one token every 500ms")
	ok, _ = l.allow("b")
	require.True(t, ok, "clients have their own buckets")

	clock.t = clock.t.Add(499 * time.Millisecond)
	ok, wait = l.allow("a")
	require.False(t, ok)
	require.InDelta(t, float64(time.Millisecond), float64(wait), float64(time.Microsecond))
	clock.t = clock.t.Add(time.Millisecond)
	ok, _ = l.allow("a")
	require.True(t, ok)
}

func TestRateLimiterMemoryIsBounded(t *testing.T) {
	t.Parallel()
	l, clock := newTestRateLimiter(1, 2, 100) // a bucket refills in 2s
	for i := range 10_000 {
		l.allow("c" + strconv.Itoa(i))
		require.LessOrEqual(t, l.len(), 100)
	}
	require.Equal(t, 100, l.len())

	// Untracked clients share one bucket of one client's size: two requests, then none.
	ok, _ := l.allow("newcomer")
	require.False(t, ok, "the 9,900 untracked clients used the shared bucket up")

	// Once tracked clients have been idle for a refill, a sweep forgets them and newcomers get
	// their own buckets again.
	clock.t = clock.t.Add(2 * time.Second)
	ok, _ = l.allow("newcomer")
	require.True(t, ok)
	require.Equal(t, 1, l.len(), "the idle clients were forgotten")

	// An active client is kept, and stays limited.
	for range 2 {
		ok, _ = l.allow("newcomer")
	}
	require.False(t, ok)
	clock.t = clock.t.Add(time.Second)
	for i := range 100 {
		l.allow("d" + strconv.Itoa(i))
	}
	ok, _ = l.allow("newcomer")
	require.True(t, ok, "one token refilled in the second")
	ok, _ = l.allow("newcomer")
	require.False(t, ok, "the active client kept its bucket through the sweep")
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"192.0.2.7:5000":                    "192.0.2.7",
		"[::ffff:192.0.2.7]:5000":           "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":        "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff:ffff:ffff:1]:1": "2001:db8:1:2::/64",
		"[fe80::1%eth0]:80":                 "fe80::/64",
		"not an address":                    "not an address",
	} {
		require.Equal(t, want, clientKey(in), in)
	}
}

func TestRateLimitAnswers429(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{RateLimit: 0.5, RateBurst: 2})
	for range 2 {
		code, _ := get(t, b.base+"/healthcheck")
		require.Equal(t, http.StatusOK, code)
	}
	resp, body := do(t, http.MethodGet, b.base+"/healthcheck", "")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "rate_limited", errorCode(t, body))
	retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, retry >= 1 && retry <= 2, "Retry-After %d: one token every 2s", retry)

	require.Equal(t, 1.0, testutil.ToFloat64(b.srv.front.m.rejected.WithLabelValues(rejectRate)))
	require.Equal(t, 1.0, testutil.ToFloat64(b.srv.front.m.requests.WithLabelValues(routeLimited, "GET", "429")))
}

func TestRateLimitIsOffByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	require.Nil(t, b.srv.front.rate)
	c := dialRaw(t, b.srv.Addr())
	for range 500 {
		resp, _ := c.do(http.MethodGet, "/healthcheck")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
}
