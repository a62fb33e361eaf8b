// Package httpapi is anchord's HTTP surface: the route table, request decoding and size limits,
// the mapping of errors to status codes and {"code","message"} bodies, /healthcheck and
// /metrics, and the server's lifecycle (Run). It holds no business logic: handlers call the
// interfaces of the components they front.
package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/ratelimit"
)

// Defaults of Config fields left zero.
const (
	ReadTimeoutDefault     = 10 * time.Second
	WriteTimeoutDefault    = 30 * time.Second
	IdleTimeoutDefault     = 2 * time.Minute
	MaxBodyBytesDefault    = 64 << 10
	ShutdownTimeoutDefault = 4 * time.Second
	HealthTimeoutDefault   = 2 * time.Second
	// MaxConnectionsDefault is far above what a load generator on loopback opens (256) and
	// within the file descriptors a default Linux process may hold once Go raises its soft limit.
	MaxConnectionsDefault = 4096
	// RateClientsDefault bounds the clients the rate limiter tracks (about 200 bytes each).
	RateClientsDefault = 65536
)

// Config configures the server.
type Config struct {
	// Addr is the listen address (host:port); port 0 picks a free port (see Server.Addr).
	Addr         string
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	MaxBodyBytes int64
	// PathBodyLimits replaces MaxBodyBytes for requests to exact paths: the federation inbox
	// takes activities that carry an anchor's linkset.
	PathBodyLimits  map[string]int64
	ShutdownTimeout time.Duration
	HealthTimeout   time.Duration

	// MaxConnections caps the connections served at once. A connection beyond it gets its first
	// request answered 429 too_many_connections with Retry-After and is closed; one beyond it by
	// another quarter (at least 16) is closed unanswered. Negative is invalid.
	MaxConnections int
	// RateLimit is the sustained requests per second one client (an IPv4 address, an IPv6 /64)
	// may send; beyond it a request gets 429 rate_limited with Retry-After. 0, the default,
	// turns rate limiting off: a load generator on loopback is one client. RateBurst is how many
	// requests a client may send at once (default: one second's worth, at least 1). RateClients
	// bounds the clients tracked; clients beyond it share one bucket.
	RateLimit   float64
	RateBurst   int
	RateClients int
	// AccessLog logs one line per answered request.
	AccessLog bool

	// Checks are the dependencies /healthcheck reports, by name ("database", "broker").
	Checks map[string]CheckFunc
	// Gatherer serves /metrics; nil disables the route.
	Gatherer prometheus.Gatherer
	// Routes registers further routes (the Sidetree API) on the mux; patterns use Go 1.22
	// ServeMux syntax and are used as the route label of the request metrics.
	Routes func(mux Router)
	// Guard, if set, wraps every route: an authorization check (TokenAuth.Wrap, AdminAuth). It
	// runs after the limits and inside the request metrics.
	Guard func(http.Handler) http.Handler
	// Listener, if set, is used instead of listening on Addr: the daemon binds its ports
	// before anything else, so that a port in use stops it before it joins a cluster.
	Listener net.Listener

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Server is the HTTP server of one anchord instance.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	listener *connLimiter
	front    *front
	srv      *http.Server
	patterns []string

	// fresh holds the connections accepted that have not carried a request yet.
	// http.Server.Shutdown waits for such a connection until it is five seconds old, longer than
	// the shutdown timeout, so a client that had just dialled (an HTTP transport dials ahead and
	// may park the connection unused) made a clean stop fail. They hold no request: Run closes
	// them once it stops accepting.
	freshMu sync.Mutex
	fresh   map[net.Conn]struct{}
}

// New listens on cfg.Addr at once, so that an address in use is reported at start with the
// parameter that set it, and builds the handler.
func New(cfg Config) (*Server, error) {
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, ReadTimeoutDefault)
	cfg.WriteTimeout = cmp.Or(cfg.WriteTimeout, WriteTimeoutDefault)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, IdleTimeoutDefault)
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, MaxBodyBytesDefault)
	cfg.ShutdownTimeout = cmp.Or(cfg.ShutdownTimeout, ShutdownTimeoutDefault)
	cfg.HealthTimeout = cmp.Or(cfg.HealthTimeout, HealthTimeoutDefault)
	if cfg.MaxConnections < 0 || cfg.RateLimit < 0 || math.IsNaN(cfg.RateLimit) || math.IsInf(cfg.RateLimit, 0) || cfg.RateBurst < 0 || cfg.RateClients < 0 {
		return nil, fmt.Errorf("http server: MaxConnections, RateLimit, RateBurst and RateClients must be finite and not negative")
	}
	cfg.MaxConnections = cmp.Or(cfg.MaxConnections, MaxConnectionsDefault)
	cfg.RateBurst = cmp.Or(cfg.RateBurst, max(1, int(math.Ceil(cfg.RateLimit))))
	cfg.RateClients = cmp.Or(cfg.RateClients, RateClientsDefault)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	routes := &patternRecorder{mux: mux}
	routes.Handle("GET /healthcheck", &healthHandler{checks: cfg.Checks, timeout: cfg.HealthTimeout, logger: logger})
	if cfg.Gatherer != nil {
		routes.Handle("GET /metrics", metricsHandler(cfg.Gatherer))
	}
	if cfg.Routes != nil {
		cfg.Routes(routes)
	}

	h := &front{mux: mux, next: mux, m: m, logger: logger, maxBody: cfg.MaxBodyBytes, pathBody: cfg.PathBodyLimits}
	if cfg.Guard != nil {
		h.next = cfg.Guard(mux)
	}
	if cfg.RateLimit > 0 {
		h.rate = ratelimit.New(cfg.RateLimit, cfg.RateBurst, cfg.RateClients)
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
		}
	}
	var handler http.Handler = h
	if cfg.AccessLog {
		handler = accessLog(handler, logger)
	}
	s := &Server{cfg: cfg, logger: logger, listener: newConnLimiter(ln, cfg.MaxConnections, m), front: h, patterns: routes.patterns, fresh: map[net.Conn]struct{}{}}
	s.srv = &http.Server{
		Handler:           handler,
		ConnContext:       connContext,
		ConnState:         s.trackFresh,
		ReadTimeout:       cfg.ReadTimeout,
		ReadHeaderTimeout: min(cfg.ReadTimeout, 5*time.Second),
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Patterns returns the route patterns the server serves, in registration order.
func (s *Server) Patterns() []string { return slices.Clone(s.patterns) }

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Run serves until ctx is done, then stops accepting, lets in-flight requests finish within the
// shutdown timeout, and returns. It returns nil on a clean shutdown.
func (s *Server) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.listener) }()
	s.logger.InfoContext(ctx, "http server listening", "addr", s.Addr())

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.srv.Shutdown(sctx) }()
	// Shutdown closes the listener at once; what it accepted before and that still has no
	// request is closed here, until Shutdown returns.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-shut:
			break wait
		case <-tick.C:
			s.closeFresh()
		}
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", serr)
	}
	if err != nil {
		_ = s.srv.Close()
		return fmt.Errorf("http server shutdown: %w", err)
	}
	return nil
}

// trackFresh is the server's ConnState hook: it keeps the connections that have not carried a
// request yet.
func (s *Server) trackFresh(c net.Conn, st http.ConnState) {
	s.freshMu.Lock()
	defer s.freshMu.Unlock()
	if st == http.StateNew {
		s.fresh[c] = struct{}{}
		return
	}
	delete(s.fresh, c)
}

// closeFresh closes the connections that have not carried a request yet.
func (s *Server) closeFresh() {
	s.freshMu.Lock()
	defer s.freshMu.Unlock()
	for c := range s.fresh {
		_ = c.Close()
		delete(s.fresh, c)
	}
}
