package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestConnectionCapAnswers429(t *testing.T) {
	t.Parallel()
	var lim *connLimiter
	b := setupWith(t, Config{MaxConnections: 1}, func(s *Server) {
		lim = s.listener
		lim.released.Init(t)
	})

	// The one connection within the cap, kept open after its request.
	first := dialRaw(t, b.srv.Addr())
	resp, _ := first.do(http.MethodGet, "/healthcheck")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// The next is told at once, and closed.
	second := dialRaw(t, b.srv.Addr())
	resp, body := second.do(http.MethodGet, "/healthcheck")
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "too_many_connections", errorCode(t, body))
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.True(t, resp.Close, "Connection: close")
	_, err := second.r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection")
	lim.released.WaitOrTimeout(t, 5*time.Second)

	// Once the first goes, a new connection is served.
	require.NoError(t, first.conn.Close())
	lim.released.WaitOrTimeout(t, 5*time.Second)
	third := dialRaw(t, b.srv.Addr())
	resp, _ = third.do(http.MethodGet, "/healthcheck")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	m := b.srv.front.m
	require.Equal(t, 1.0, testutil.ToFloat64(m.rejected.WithLabelValues(rejectConnections)))
	require.Equal(t, 1.0, testutil.ToFloat64(m.requests.WithLabelValues(routeLimited, "GET", "429")))
	require.Equal(t, 1.0, testutil.ToFloat64(m.connections))
}

func TestConnectionCapDropsBeyondItsSlack(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	l := newConnLimiter(ln, 2, m) // 2 served, 16 answered 429, the rest closed
	t.Cleanup(func() { _ = l.Close() })
	require.EqualValues(t, 18, l.hardMax)

	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	var accepted []net.Conn
	for i := range 18 {
		dial()
		c, err := l.Accept()
		require.NoError(t, err)
		require.Equal(t, i >= 2, c.(*limitedConn).over, "connection %d", i)
		accepted = append(accepted, c)
	}
	require.Equal(t, 18.0, testutil.ToFloat64(m.connections))

	// The 19th is closed without a word; Accept goes on to the next.
	next := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(next)
			return
		}
		next <- c
	}()
	dropped := dial()
	require.NoError(t, dropped.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = dropped.Read(make([]byte, 1))
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isConnError(err), "read: %v", err)
	require.Equal(t, 1.0, testutil.ToFloat64(m.rejected.WithLabelValues(rejectConnectionDropped)))

	// A slot freed is a slot taken.
	require.NoError(t, accepted[0].Close())
	_ = accepted[0].Close()
	require.EqualValues(t, 17, l.open.Load(), "closing twice gives the slot back once")
	dial()
	c := <-next
	require.NotNil(t, c)
	require.True(t, c.(*limitedConn).over)
	require.EqualValues(t, 18, l.open.Load())
	require.NoError(t, c.Close())
}

func isConnError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}
