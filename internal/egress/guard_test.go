package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

type testBundle struct {
	guard *Guard
	reg   *prometheus.Registry
}

func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	g, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(g.CloseIdleConnections)
	return &testBundle{guard: g, reg: reg}
}

func allow(t *testing.T, list string) Allowed {
	t.Helper()
	a, err := ParseAllowed(list)
	require.NoError(t, err)
	return a
}

// counting is a test server that counts the requests that reach it.
type counting struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newCounting(t *testing.T, h http.HandlerFunc) *counting {
	t.Helper()
	c := &counting{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *counting) hostPort() string { return strings.TrimPrefix(c.srv.URL, "http://") }

func get(ctx context.Context, g *Guard, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := g.Client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func requireRefused(t *testing.T, err error, reason string) {
	t.Helper()
	require.ErrorIs(t, err, ErrRefused)
	var re *RefusedError
	require.ErrorAs(t, err, &re)
	require.Equal(t, reason, re.Reason, err)
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	_, err := New(Config{MaxRequests: -1})
	require.ErrorContains(t, err, "must be positive")
	_, err = New(Config{Timeout: -time.Second})
	require.ErrorContains(t, err, "negative")
	_, err = New(Config{Refused: []string{"no-port"}})
	require.ErrorContains(t, err, "refused listener")
}

func TestCheckRefusesSpecialAddressesUnlessAllowed(t *testing.T) {
	t.Parallel()
	closed := setup(t, Config{})
	open := setup(t, Config{Allowed: allow(t, "127.0.0.0/8,::1/128,10.0.0.0/8,fd00::/8,169.254.0.0/16,fe80::/10,100.64.0.0/10,192.0.2.0/24,0.0.0.0/0,::/0")})
	for _, tt := range []struct {
		ap     string
		reason string
		// stays: still refused with everything allowed.
		stays bool
	}{
		{"127.0.0.1:80", ReasonLoopback, false},
		{"[::1]:80", ReasonLoopback, false},
		{"[::ffff:127.0.0.1]:80", ReasonLoopback, false},
		{"10.1.1.1:443", ReasonPrivate, false},
		{"172.16.5.4:443", ReasonPrivate, false},
		{"192.168.0.1:443", ReasonPrivate, false},
		{"[fd00::1]:443", ReasonPrivate, false},
		{"[::ffff:192.168.0.1]:443", ReasonPrivate, false},
		{"169.254.169.254:80", ReasonLinkLocal, false},
		{"[fe80::1]:80", ReasonLinkLocal, false},
		{"100.64.1.1:80", ReasonCGNAT, false},
		{"192.0.2.5:80", ReasonReserved, false},
		{"[2001:db8::1]:80", ReasonReserved, false},
		{"0.0.0.0:80", ReasonUnspecified, true},
		{"[::]:80", ReasonUnspecified, true},
		{"[::ffff:0.0.0.0]:80", ReasonUnspecified, true},
		{"224.0.0.1:80", ReasonMulticast, true},
		{"[ff02::1]:80", ReasonMulticast, true},
	} {
		ap := netip.MustParseAddrPort(tt.ap)
		requireRefused(t, closed.guard.Check(ap), tt.reason)
		if tt.stays {
			requireRefused(t, open.guard.Check(ap), tt.reason)
		} else {
			require.NoError(t, open.guard.Check(ap), tt.ap)
		}
	}
	for _, public := range []string{"8.8.8.8:443", "[2606:4700:4700::1111]:443", "[::ffff:1.1.1.1]:80"} {
		require.NoError(t, closed.guard.Check(netip.MustParseAddrPort(public)), public)
	}
}

func TestCheckAllowsByHostPort(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Allowed: allow(t, "127.0.0.1:8443,[::1]:9000")})
	require.NoError(t, b.guard.Check(netip.MustParseAddrPort("127.0.0.1:8443")))
	require.NoError(t, b.guard.Check(netip.MustParseAddrPort("[::ffff:127.0.0.1]:8443")), "the mapped form is the same address")
	require.NoError(t, b.guard.Check(netip.MustParseAddrPort("[::1]:9000")))
	requireRefused(t, b.guard.Check(netip.MustParseAddrPort("127.0.0.1:8444")), ReasonLoopback)
	requireRefused(t, b.guard.Check(netip.MustParseAddrPort("127.0.0.2:8443")), ReasonLoopback)
	requireRefused(t, b.guard.Check(netip.MustParseAddrPort("[::1]:8443")), ReasonLoopback)
}

func TestRequestsToRefusedDestinationsNeverConnect(t *testing.T) {
	t.Parallel()
	sink := newCounting(t, nil)
	_, port, err := net.SplitHostPort(sink.hostPort())
	require.NoError(t, err)
	admin := newCounting(t, nil)
	b := setup(t, Config{Allowed: allow(t, "127.0.0.1:1"), Refused: []string{admin.hostPort()}})
	ctx := context.Background()

	_, _, err = get(ctx, b.guard, sink.srv.URL+"/x")
	requireRefused(t, err, ReasonLoopback)
	// A name is checked after resolution, where the dialer connects.
	_, _, err = get(ctx, b.guard, "http://localhost:"+port+"/x")
	requireRefused(t, err, ReasonLoopback)
	_, _, err = get(ctx, b.guard, "http://[::ffff:127.0.0.1]:"+port+"/x")
	requireRefused(t, err, ReasonLoopback)
	_, _, err = get(ctx, b.guard, admin.srv.URL+"/admin/v1/dead-letters/1/retry")
	requireRefused(t, err, ReasonAdmin)
	_, _, err = get(ctx, b.guard, "ftp://"+sink.hostPort()+"/x")
	requireRefused(t, err, ReasonScheme)
	require.Zero(t, sink.hits.Load())
	require.Zero(t, admin.hits.Load())
	require.Equal(t, 3.0, testutil.ToFloat64(b.guard.m.refused.WithLabelValues(ReasonLoopback)))
	require.Equal(t, 1.0, testutil.ToFloat64(b.guard.m.refused.WithLabelValues(ReasonAdmin)))
}

func TestNameResolvingToPrivateAddressIsRefusedAtDial(t *testing.T) {
	t.Parallel()
	sink := newCounting(t, nil)
	_, port, err := net.SplitHostPort(sink.hostPort())
	require.NoError(t, err)
	b := setup(t, Config{})
	// The URL carries a name, so the pre-check lets it through: only the dial sees 127.0.0.1.
	req, err := http.NewRequest(http.MethodGet, "http://localhost:"+port+"/", nil)
	require.NoError(t, err)
	require.NoError(t, b.guard.precheck(req))
	_, err = b.guard.Client().Do(req)
	requireRefused(t, err, ReasonLoopback)
	var op *net.OpError
	require.ErrorAs(t, err, &op, "the refusal came from the dialer")
	require.Zero(t, sink.hits.Load())
}

func TestAllowedDestinationIsReached(t *testing.T) {
	t.Parallel()
	sink := newCounting(t, nil)
	b := setup(t, Config{Allowed: allow(t, sink.hostPort())})
	status, body, err := get(context.Background(), b.guard, sink.srv.URL+"/x")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok", body)
	require.Equal(t, int64(1), sink.hits.Load())
	require.Zero(t, testutil.ToFloat64(b.guard.m.inFlight), "the slot is back once the body was read")
}

func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var target atomic.Int64
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/target" {
			target.Add(1)
			return
		}
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	b := setup(t, Config{Allowed: allow(t, srv.hostPort())})
	status, _, err := get(context.Background(), b.guard, srv.srv.URL+"/from")
	require.NoError(t, err)
	require.Equal(t, http.StatusFound, status)
	require.Zero(t, target.Load())
}

func TestResponsesAreBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 5000)
	srv := newCounting(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/announced":
			_, _ = io.WriteString(w, big)
		case "/streamed":
			for range 5 {
				_, _ = io.WriteString(w, big[:1000])
				w.(http.Flusher).Flush()
			}
		case "/exact":
			_, _ = io.WriteString(w, big[:4000])
		case "/slow":
			<-r.Context().Done()
		}
	})
	b := setup(t, Config{Allowed: allow(t, srv.hostPort()), MaxResponseBytes: 4000, Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	_, _, err := get(ctx, b.guard, srv.srv.URL+"/announced")
	require.ErrorIs(t, err, ErrTooLarge)
	_, _, err = get(ctx, b.guard, srv.srv.URL+"/streamed")
	require.ErrorIs(t, err, ErrTooLarge)
	_, body, err := get(ctx, b.guard, srv.srv.URL+"/exact")
	require.NoError(t, err)
	require.Len(t, body, 4000)
	start := time.Now()
	_, _, err = get(ctx, b.guard, srv.srv.URL+"/slow")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Zero(t, testutil.ToFloat64(b.guard.m.inFlight))
}

// tracker records how many requests are in a handler at once, and the most there were.
type tracker struct {
	mu   sync.Mutex
	now  int
	most int
}

func (tr *tracker) enter() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.now++
	tr.most = max(tr.most, tr.now)
}

func (tr *tracker) leave() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.now--
}

func (tr *tracker) max() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.most
}

// blocking is a server whose requests wait until release is closed; each request is counted by
// its own tracker and by all (shared among servers), and announced on arrived.
type blocking struct {
	*counting
	own tracker
}

func newBlocking(t *testing.T, release, arrived chan struct{}, all *tracker) *blocking {
	t.Helper()
	b := &blocking{}
	b.counting = newCounting(t, func(http.ResponseWriter, *http.Request) {
		b.own.enter()
		all.enter()
		arrived <- struct{}{}
		<-release
		all.leave()
		b.own.leave()
	})
	return b
}

func TestCapsHoldRequestsInFlight(t *testing.T) {
	t.Parallel()
	release, arrived := make(chan struct{}), make(chan struct{}, 100)
	var all tracker
	hosts := []*blocking{newBlocking(t, release, arrived, &all), newBlocking(t, release, arrived, &all), newBlocking(t, release, arrived, &all)}
	var list []string
	for _, h := range hosts {
		list = append(list, h.hostPort())
	}
	// Three hosts of 4 slots each would hold 12; the global cap holds 6.
	b := setup(t, Config{Allowed: allow(t, strings.Join(list, ",")), MaxRequests: 6, MaxRequestsPerHost: 4, Timeout: time.Minute})
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := get(context.Background(), b.guard, hosts[i%3].srv.URL+"/")
			errs <- err
		}()
	}
	for range 6 {
		<-arrived
	}
	// Every request that can start has arrived; the rest wait for slots. Let them run.
	require.Equal(t, 6.0, testutil.ToFloat64(b.guard.m.inFlight))
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := 0
	for _, h := range hosts {
		require.LessOrEqual(t, h.own.max(), 4, "per-host cap")
		total += int(h.hits.Load())
	}
	require.Equal(t, 30, total)
	require.Equal(t, 6, all.max(), "global cap")
	require.Zero(t, testutil.ToFloat64(b.guard.m.inFlight))
	require.Equal(t, uint64(30), anchordtest.HistogramCount(t, b.reg, "anchord_egress_slot_wait_seconds"))
}

func TestPerHostCapAndBoundedWait(t *testing.T) {
	t.Parallel()
	release, arrived := make(chan struct{}), make(chan struct{}, 100)
	slow := newBlocking(t, release, arrived, &tracker{})
	other := newCounting(t, nil)
	b := setup(t, Config{Allowed: allow(t, slow.hostPort()+","+other.hostPort()), MaxRequests: 10, MaxRequestsPerHost: 2, Timeout: time.Minute})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = get(context.Background(), b.guard, slow.srv.URL+"/")
		}()
	}
	<-arrived
	<-arrived
	// The slow host's two slots are taken: a third request waits until its deadline...
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, _, err := get(ctx, b.guard, slow.srv.URL+"/")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1.0, testutil.ToFloat64(b.guard.m.slotTimeouts.WithLabelValues("host")))
	// ...while another host is served at once.
	status, _, err := get(context.Background(), b.guard, other.srv.URL+"/")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	close(release)
	wg.Wait()
	require.Equal(t, 2, slow.own.max())
	require.Equal(t, int64(2), slow.hits.Load())
}

func TestRoundTripperWithoutDeadlineWaitsAtMostTimeout(t *testing.T) {
	t.Parallel()
	release, arrived := make(chan struct{}), make(chan struct{}, 10)
	slow := newBlocking(t, release, arrived, &tracker{})
	b := setup(t, Config{Allowed: allow(t, slow.hostPort()), MaxRequestsPerHost: 1, Timeout: 200 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequest(http.MethodGet, slow.srv.URL+"/", nil)
		if resp, err := b.guard.RoundTrip(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-arrived
	// A client without any timeout, through the guard as its transport.
	req, err := http.NewRequest(http.MethodGet, slow.srv.URL+"/", nil)
	require.NoError(t, err)
	_, err = (&http.Client{Transport: b.guard}).Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(release)
	<-done
}
