package anchordtest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Sink is an HTTP server on loopback that answers 404 to everything and counts the requests
// that reached it: what a test aims a hostile peer's URLs at to show that nothing got there.
type Sink struct {
	srv  *httptest.Server
	hits atomic.Int64
}

// NewSink starts a Sink, closed when the test ends.
func NewSink(t testing.TB) *Sink {
	t.Helper()
	s := &Sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the sink's base URL (http://host:port).
func (s *Sink) URL() string { return s.srv.URL }

// Host is the sink's host:port.
func (s *Sink) Host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// Hits is how many requests reached the sink.
func (s *Sink) Hits() int64 { return s.hits.Load() }

// NotHTTP listens on a loopback port and answers every connection with a line that is not
// HTTP, as an SSH server does; it returns host:port.
func NotHTTP(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}
