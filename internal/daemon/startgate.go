package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// startGate serves the bound ports while the start waits for its dependencies (PostgreSQL,
// RabbitMQ) and builds the components: every request gets a 503 that names what the start
// waits for, so a port that is open is never one whose connections hang. The ports are bound
// first, before anything is created, so a busy port fails the start before the data directory
// exists. handOver stops the gate's servers without closing the listeners, which the real
// servers then serve.
type startGate struct {
	logger  *slog.Logger
	waiting atomic.Pointer[string]
	gates   []*gatedListener
	servers []*http.Server
	wg      sync.WaitGroup
}

// newStartGate serves lns until handOver.
func newStartGate(logger *slog.Logger, lns ...net.Listener) *startGate {
	g := &startGate{logger: logger}
	g.wait("start")
	for _, ln := range lns {
		gl := &gatedListener{Listener: ln}
		srv := &http.Server{Handler: g, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Second,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
		g.gates, g.servers = append(g.gates, gl), append(g.servers, srv)
		g.wg.Go(func() { _ = srv.Serve(gl) })
	}
	return g
}

// wait records what the start waits for now ("PostgreSQL", "RabbitMQ").
func (g *startGate) wait(what string) { g.waiting.Store(&what) }

// ServeHTTP answers 503 with what the start waits for; /healthcheck in its usual shape.
func (g *startGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	what := *g.waiting.Load()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusServiceUnavailable)
	var body any
	if r.URL.Path == "/healthcheck" || r.URL.Path == "/healthz" {
		body = map[string]any{"status": "starting", "waiting_for": what, "time": time.Now().UTC()}
	} else {
		body = map[string]string{"code": "starting", "message": "anchord is starting: waiting for " + what}
	}
	_ = json.NewEncoder(w).Encode(body)
}

// handOver stops answering on the listeners (waiting up to timeout for requests in flight) and
// leaves them open for the real servers.
func (g *startGate) handOver(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	for _, srv := range g.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	g.wg.Wait()
	for _, gl := range g.gates {
		errs = append(errs, gl.reopen())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hand the ports over to the servers: %w", err)
	}
	return nil
}

// gatedListener is a listener whose Close only stops Accept (through a deadline), so that the
// gate's server can be shut down and the listener served again.
type gatedListener struct {
	net.Listener
	stopped atomic.Bool
}

// deadliner is what net.TCPListener offers to interrupt an Accept.
type deadliner interface{ SetDeadline(time.Time) error }

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.stopped.Load() {
		return nil, net.ErrClosed
	}
	return c, err
}

// Close stops Accept; the listener stays bound.
func (l *gatedListener) Close() error {
	l.stopped.Store(true)
	if d, ok := l.Listener.(deadliner); ok {
		return d.SetDeadline(time.Now())
	}
	return nil
}

// reopen clears the deadline Close set, for the next server.
func (l *gatedListener) reopen() error {
	if d, ok := l.Listener.(deadliner); ok {
		return d.SetDeadline(time.Time{})
	}
	return nil
}
