// Package devledgertest starts a devledger for tests of code that talks to a ledger (the ledger
// clients, the batch submitter): Start serves one on a loopback port until the test ends, with
// a clock the test moves by hand and a record of the requests it received.
package devledgertest

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
)

// Request is what the ledger recorded of one request.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
}

// Ledger is a running devledger.
type Ledger struct {
	Server *devledger.Server
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL      string
	Clock    *anchordtest.Clock
	Registry *prometheus.Registry

	mu       sync.Mutex
	requests []Request
}

// Start serves a devledger configured by cfg until the test ends. Unless cfg sets them, it uses
// the returned Ledger's Clock, a fresh registry, the test's logger and a commit delay of 10 s
// (of the fake clock: nothing commits until the test advances it). Batches are committed by
// status queries and Stats; the Run loop's ticker only refreshes metrics.
func Start(tb testing.TB, cfg devledger.Config) *Ledger {
	tb.Helper()
	l := &Ledger{Clock: anchordtest.NewClock(), Registry: prometheus.NewRegistry()}
	if cfg.NowFunc == nil {
		cfg.NowFunc = l.Clock.Now
	}
	if cfg.Registerer == nil {
		cfg.Registerer = l.Registry
	}
	if cfg.Logger == nil {
		cfg.Logger = anchordtest.Logger(tb)
	}
	if cfg.CommitDelay == 0 {
		cfg.CommitDelay = 10 * time.Second
	}
	srv, err := devledger.New(cfg)
	require.NoError(tb, err)
	l.Server = srv

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	l.URL = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	hs := &http.Server{Handler: l.record(srv.Handler()), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { done <- hs.Serve(ln) }()
	tb.Cleanup(func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		require.NoError(tb, hs.Shutdown(sctx))
		require.ErrorIs(tb, <-done, http.ErrServerClosed)
	})
	return l
}

func (l *Ledger) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.requests = append(l.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone()})
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// Requests returns the requests received so far, in order.
func (l *Ledger) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.requests...)
}

// Stats returns the ledger's counters.
func (l *Ledger) Stats() devledger.Stats { return l.Server.Stats() }
