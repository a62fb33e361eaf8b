package httpapi

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/anchord/anchord/internal/testsignal"
)

// connLimiter is a listener that caps the connections being served.
//
// Unlike a listener that stops accepting at its cap (netutil.LimitListener), it never leaves a
// client hanging in the kernel's accept queue with no idea why: a connection beyond the cap is
// accepted and marked, and the server answers its first request 503 with Retry-After and closes
// it (see instrument), so the client learns at once to back off, through ordinary HTTP. Answering
// costs reading one request head, which ReadHeaderTimeout and MaxHeaderBytes bound; so that a
// flood of connections cannot turn that into unbounded work, a connection beyond the cap plus
// slack is closed unanswered the moment it is accepted.
type connLimiter struct {
	net.Listener
	max     int64 // served normally up to here
	hardMax int64 // answered 503 up to here, closed at once beyond
	open    atomic.Int64
	m       *metrics

	released testsignal.Signal[struct{}] // a connection gave its slot back
}

// newConnLimiter wraps ln. Slack beyond max is a quarter of max, at least 16 connections.
func newConnLimiter(ln net.Listener, limit int, m *metrics) *connLimiter {
	return &connLimiter{Listener: ln, max: int64(limit), hardMax: int64(limit + max(limit/4, 16)), m: m}
}

// Accept returns the next connection within the hard cap, marked when it is beyond the cap.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.open.Add(1)
		l.m.connections.Inc()
		lc := &limitedConn{Conn: c, l: l, over: n > l.max}
		if n > l.hardMax {
			l.m.rejected.WithLabelValues(rejectConnectionDropped).Inc()
			_ = lc.Close()
			continue
		}
		return lc, nil
	}
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	over bool
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.m.connections.Dec()
		c.l.released.Signal(struct{}{})
	})
	return err
}

// CloseWrite passes through to TCP, so that net/http can half-close before closing and the
// client reads the last response instead of a reset.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type overCapKey struct{}

// connContext marks the context of a connection beyond the cap (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok && lc.over {
		return context.WithValue(ctx, overCapKey{}, true)
	}
	return ctx
}

// overCap reports whether r came on a connection beyond the cap.
func overCap(r *http.Request) bool {
	over, _ := r.Context().Value(overCapKey{}).(bool)
	return over
}
