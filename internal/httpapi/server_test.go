package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

type testBundle struct {
	srv    *Server
	base   string
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	return setupWith(t, cfg, nil)
}

// setupWith is setup with a hook that runs after New and before Run (to Init test signals).
func setupWith(t *testing.T, cfg Config, before func(*Server)) *testBundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Addr = "127.0.0.1:0"
	cfg.Registerer = reg
	cfg.Gatherer = reg
	cfg.Logger = anchordtest.Logger(t)
	srv, err := New(cfg)
	require.NoError(t, err)
	if before != nil {
		before(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	b := &testBundle{srv: srv, base: "http://" + srv.Addr(), reg: reg, cancel: cancel, done: done}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
	})
	return b
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	var brokerErr error
	b := setup(t, Config{Checks: map[string]CheckFunc{
		"database": func(context.Context) error { return nil },
		"broker":   func(context.Context) error { return brokerErr },
	}})

	code, body := get(t, b.base+"/healthcheck")
	require.Equal(t, http.StatusOK, code)
	var rep HealthReport
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Equal(t, "up", rep.Status)
	require.Equal(t, "up", rep.Checks["database"].Status)
	require.Equal(t, "up", rep.Checks["broker"].Status)

	brokerErr = errors.New("dial tcp 10.0.0.5:5672: connect: connection refused")
	code, body = get(t, b.base+"/healthcheck")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Equal(t, "down", rep.Status)
	require.Equal(t, "up", rep.Checks["database"].Status)
	require.Equal(t, "down", rep.Checks["broker"].Status)
	require.Equal(t, "check failed; see the server log", rep.Checks["broker"].Error)
	require.NotContains(t, string(body), "10.0.0.5", "internal addresses stay in the log")
}

func TestHealthcheckTimesOutAHangingDependency(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{HealthTimeout: 100 * time.Millisecond, Checks: map[string]CheckFunc{
		"database": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	}})
	start := time.Now()
	code, body := get(t, b.base+"/healthcheck")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Contains(t, string(body), "no answer within 100ms")
}

func TestMetricsRouteAndRequestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Routes: func(mux Router) {
		mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	}})
	for _, id := range []string{"a", "b", "c"} {
		code, _ := get(t, b.base+"/things/"+id)
		require.Equal(t, http.StatusTeapot, code)
	}
	code, _ := get(t, b.base+"/nowhere")
	require.Equal(t, http.StatusNotFound, code)

	code, body := get(t, b.base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `anchord_http_requests_total{code="418",method="GET",route="GET /things/{id}"} 3`)
	require.Contains(t, string(body), `route="unmatched"`)
	require.Equal(t, 1, testutil.CollectAndCount(b.reg, "anchord_http_requests_in_flight"))
}

func TestBodyLimitAnswers413(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxBodyBytes: 1024, Routes: func(mux Router) {
		mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.ReadAll(r.Body); err != nil {
				var mbe *http.MaxBytesError
				require.ErrorAs(t, err, &mbe)
				WriteError(w, http.StatusRequestEntityTooLarge, "body_too_large", err.Error())
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}})
	resp, err := http.Post(b.base+"/echo", "application/json", strings.NewReader(strings.Repeat("x", 1024)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	resp, err = http.Post(b.base+"/echo", "application/json", strings.NewReader(strings.Repeat("x", 1025)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	var eb ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&eb))
	require.Equal(t, "body_too_large", eb.Code)
}

func TestPathBodyLimitReplacesTheDefault(t *testing.T) {
	t.Parallel()
	echo := func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			WriteError(w, http.StatusRequestEntityTooLarge, "body_too_large", err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	b := setup(t, Config{MaxBodyBytes: 1024, PathBodyLimits: map[string]int64{"/big": 4096}, Routes: func(mux Router) {
		mux.HandleFunc("POST /big", echo)
		mux.HandleFunc("POST /small", echo)
	}})
	for _, c := range []struct {
		path string
		size int
		want int
	}{{"/big", 4096, http.StatusNoContent}, {"/big", 4097, http.StatusRequestEntityTooLarge}, {"/small", 1025, http.StatusRequestEntityTooLarge}} {
		resp, err := http.Post(b.base+c.path, "application/json", strings.NewReader(strings.Repeat("x", c.size)))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, c.want, resp.StatusCode, "%s with %d bytes", c.path, c.size)
	}
}

func TestPanicBecomes500(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Routes: func(mux Router) {
		mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("boom") })
	}})
	code, body := get(t, b.base+"/boom")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, string(body), "internal_error")
	code, _ = get(t, b.base+"/healthcheck")
	require.Equal(t, http.StatusOK, code, "server keeps serving")
}

func TestRunDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	b := setup(t, Config{Routes: func(mux Router) {
		mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			w.WriteHeader(http.StatusOK)
		})
	}})
	codes := make(chan int, 1)
	go func() {
		resp, err := http.Get(b.base + "/slow")
		if err != nil {
			codes <- 0
			return
		}
		resp.Body.Close()
		codes <- resp.StatusCode
	}()
	anchordtest.WaitOrTimeout(t, entered, 5*time.Second)
	b.cancel()
	close(release)
	require.Equal(t, http.StatusOK, anchordtest.WaitOrTimeout(t, codes, 5*time.Second))
	require.NoError(t, anchordtest.WaitOrTimeout(t, b.done, 5*time.Second))
	b.done <- nil // let the cleanup's wait succeed
	_, err := http.Get(b.base + "/healthcheck")
	require.Error(t, err, "no longer accepting")
}

func TestNewRefusesNegativeLimits(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{MaxConnections: -1}, {RateLimit: -1}, {RateBurst: -1}, {RateClients: -1}} {
		cfg.Addr = "127.0.0.1:0"
		_, err := New(cfg)
		require.ErrorContains(t, err, "must be finite and not negative")
	}
}

func TestNewReportsAddressInUse(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	_, err := New(Config{Addr: b.srv.Addr()})
	require.ErrorContains(t, err, "listen on "+b.srv.Addr())
}

// TestStopsCleanlyBesideAConnectionWithoutRequest: a client may open a connection and not use it
// yet (an HTTP transport dials ahead); the server's stop must not wait for it to age, which took
// longer than the shutdown timeout and failed the stop.
func TestStopsCleanlyBesideAConnectionWithoutRequest(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	srv, err := New(Config{Addr: "127.0.0.1:0", Registerer: reg, Gatherer: reg, Logger: anchordtest.Logger(t), ShutdownTimeout: 3 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	code, _ := get(t, "http://"+srv.Addr()+"/healthcheck")
	require.Equal(t, http.StatusOK, code)

	idle, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	defer idle.Close()
	// Let the server accept it, so that it is a connection without a request, not a pending dial.
	time.Sleep(100 * time.Millisecond)

	start := time.Now()
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
	require.Less(t, time.Since(start), 2*time.Second, "the stop waited for the unused connection")
	_ = idle.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = idle.Read(make([]byte, 1))
	require.Error(t, err, "the unused connection is closed")
}
