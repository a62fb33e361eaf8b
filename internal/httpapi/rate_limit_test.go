package httpapi

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

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
