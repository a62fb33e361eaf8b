package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrTooLarge is wrapped when a response body passes Config.MaxResponseBytes.
var ErrTooLarge = errors.New("egress: response larger than allowed")

// Guard is the way out: an http.RoundTripper that checks every destination address at dial
// time, caps the requests in flight, and bounds every response. It is safe for concurrent use.
type Guard struct {
	cfg       Config
	listeners []listenerRule
	transport *http.Transport
	limiter   *limiter
	m         *metrics
	client    *http.Client
}

var _ http.RoundTripper = (*Guard)(nil)

// New returns a Guard for cfg; it resolves the names among cfg.Refused.
func New(cfg Config) (*Guard, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new egress guard: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	listeners, err := listenerRules(ctx, cfg.Refused)
	if err != nil {
		return nil, fmt.Errorf("new egress guard: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg, listeners: listeners, m: m, limiter: newLimiter(cfg.MaxRequests, cfg.MaxRequestsPerHost, m)}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second, Control: g.control}
	g.transport = &http.Transport{
		// No proxy: a proxy would be the only address dialled, and the destination would go
		// unchecked.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           cfg.MaxRequests,
		MaxIdleConnsPerHost:    cfg.MaxRequestsPerHost,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    cfg.DialTimeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	}
	g.client = &http.Client{
		Transport: g,
		Timeout:   cfg.Timeout,
		// A signed request covers one target, and a redirect would be a second destination
		// chosen by the peer: the 3xx is the answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return g, nil
}

// Client returns the guard's HTTP client: it does not follow redirects and bounds each request
// by Config.Timeout. Every federation room sends through it (or through the Guard as a
// RoundTripper).
func (g *Guard) Client() *http.Client { return g.client }

// CloseIdleConnections closes the idle connections to other domains.
func (g *Guard) CloseIdleConnections() { g.transport.CloseIdleConnections() }

// Check reports whether the guard would let a connection to ap through, as the dial-time check
// does: a *RefusedError when not.
func (g *Guard) Check(ap netip.AddrPort) error {
	ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	if refusesListener(g.listeners, ap) {
		return &RefusedError{Addr: ap.String(), Reason: ReasonAdmin}
	}
	reason := Classify(ap.Addr())
	if reason == "" || (!neverAllowed(reason) && g.cfg.Allowed.allows(ap)) {
		return nil
	}
	return &RefusedError{Addr: ap.String(), Reason: reason}
}

// RoundTrip sends req if its destination passes: the scheme and a literal address are checked
// at once, a name's addresses when they are dialled; then it waits for a slot (until req's
// context ends) and bounds the response body. The slot is held until the body is closed or read
// to its end.
func (g *Guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.precheck(req); err != nil {
		closeBody(req)
		return nil, g.refused(req.Context(), err)
	}
	wait := req.Context()
	if _, ok := wait.Deadline(); !ok {
		// A client without a timeout still waits for a slot no longer than one request may take.
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(wait, g.cfg.Timeout)
		defer cancel()
	}
	release, err := g.limiter.acquire(wait, hostKey(req))
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := g.transport.RoundTrip(req)
	if err != nil {
		release()
		return nil, g.refused(req.Context(), err)
	}
	if resp.ContentLength > g.cfg.MaxResponseBytes {
		_ = resp.Body.Close()
		release()
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d", ErrTooLarge, resp.ContentLength, g.cfg.MaxResponseBytes)
	}
	resp.Body = &boundedBody{rc: resp.Body, left: g.cfg.MaxResponseBytes, release: release}
	return resp, nil
}

// precheck refuses what needs no resolution: a scheme other than http(s), and a literal IP
// address that the dial would refuse.
func (g *Guard) precheck(req *http.Request) error {
	u := req.URL
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") {
		host := ""
		if u != nil {
			host = u.Host
		}
		return &RefusedError{Addr: host, Reason: ReasonScheme}
	}
	ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]"))
	if err != nil {
		return nil // a name: checked when its addresses are dialled
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	ap, err := netip.ParseAddrPort(net.JoinHostPort(ip.String(), port))
	if err != nil {
		return &RefusedError{Addr: u.Host, Reason: ReasonAddress}
	}
	return g.Check(ap)
}

// control is the dialer's check of each address it is about to connect to, after resolution.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Addr: address, Reason: ReasonAddress}
	}
	return g.Check(ap)
}

// refused counts and logs a refusal found in err, and returns err.
func (g *Guard) refused(ctx context.Context, err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		g.m.refused.WithLabelValues(re.Reason).Inc()
		g.cfg.Logger.DebugContext(ctx, "destination refused", "addr", re.Addr, "reason", re.Reason)
	}
	return err
}

// hostKey names the host whose cap a request counts against: the URL's host and port.
func hostKey(req *http.Request) string {
	host, port := strings.ToLower(req.URL.Hostname()), req.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[req.URL.Scheme]
	}
	return net.JoinHostPort(host, port)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// boundedBody fails a read past the bound with ErrTooLarge, and gives the request's slot back
// at the end of the body or when it is closed, whichever comes first.
type boundedBody struct {
	rc      io.ReadCloser
	left    int64
	release func()
	once    sync.Once
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the bound: the body must end here.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.done()
			return 0, ErrTooLarge
		}
		if err != nil {
			b.done()
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.rc.Close()
	b.done()
	return err
}

func (b *boundedBody) done() { b.once.Do(b.release) }
