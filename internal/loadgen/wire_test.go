package loadgen

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The wire reads what a Go server writes: a body with a length, a chunked one (beyond the
// server's 2 KiB buffer), an error with a body, and Connection: close; it sends the target's
// path prefix, the body and its type; and it keeps one connection for requests in a row.
func TestWireSpeaksHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/base/small":
			_, _ = io.WriteString(w, "small")
		case "/base/large":
			w.WriteHeader(http.StatusOK)
			for range 100 {
				_, _ = io.WriteString(w, strings.Repeat("x", 100))
				w.(http.Flusher).Flush()
			}
		case "/base/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write(append([]byte(r.Header.Get("Content-Type")+" "), b...))
		case "/base/close":
			w.Header().Set("Connection", "close")
			_, _ = io.WriteString(w, "bye")
		default:
			http.NotFound(w, r)
		}
	}))
	conns := startCounting(srv)
	defer srv.Close()

	target := srv.URL + "/base"
	w, err := newWire([]string{target}, 4, 5*time.Second)
	require.NoError(t, err)
	defer w.close()
	ctx := context.Background()

	status, body, err := w.do(ctx, target, http.MethodGet, "/small", "", nil, true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "small", string(body))

	status, body, err = w.do(ctx, target, http.MethodGet, "/large", "", nil, true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, strings.Repeat("x", 10_000), string(body))

	status, body, err = w.do(ctx, target, http.MethodPost, "/echo", "application/json", []byte(`{"a":1}`), true)
	require.NoError(t, err)
	require.Equal(t, http.StatusTeapot, status)
	require.Equal(t, `application/json {"a":1}`, string(body))

	status, body, err = w.do(ctx, target, http.MethodGet, "/small", "", nil, false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Nil(t, body, "a dropped body is not returned")
	require.EqualValues(t, 1, conns.Load(), "one connection served the requests in a row")

	status, body, err = w.do(ctx, target, http.MethodGet, "/close", "", nil, true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "bye", string(body))
	status, _, err = w.do(ctx, target, http.MethodGet, "/small", "", nil, false)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.EqualValues(t, 2, conns.Load(), "a connection the server closed is not used again")
}

// A connection the server closed while it was idle is replaced, and the request goes through.
func TestWireRetriesAConnectionClosedWhileIdle(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	conns := startCounting(srv)
	defer srv.Close()
	w, err := newWire([]string{srv.URL}, 4, 5*time.Second)
	require.NoError(t, err)
	defer w.close()
	ctx := context.Background()

	_, _, err = w.do(ctx, srv.URL, http.MethodGet, "/", "", nil, false)
	require.NoError(t, err)
	srv.CloseClientConnections()
	status, body, err := w.do(ctx, srv.URL, http.MethodGet, "/", "", nil, true)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ok", string(body))
	require.EqualValues(t, 2, conns.Load())

	srv.Close()
	_, _, err = w.do(ctx, srv.URL, http.MethodGet, "/", "", nil, false)
	require.Error(t, err, "with the server gone the request fails instead of retrying for ever")
}

// startCounting starts srv and counts the connections it accepts.
func startCounting(srv *httptest.Server) *atomic.Int32 {
	var conns atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	return &conns
}
