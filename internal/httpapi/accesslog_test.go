package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

func TestAccessLogOneLinePerRequest(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /things/{id}", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("short and stout"))
	})
	log := &anchordtest.SyncBuffer{}
	h := accessLog(mux, slog.New(slog.NewTextHandler(log, nil)))

	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/things/a", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/things/"+strings.Repeat("x", 1000), nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/nowhere", nil))

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[0], `msg=access method=GET path=/things/a route="GET /things/{id}" status=418 bytes=15 took=`)
	require.Less(t, len(lines[1]), 600, "a long path is cut")
	require.Contains(t, lines[2], "route=unmatched status=404")
}

// TestAccessLogOption: the server writes access lines only with Config.AccessLog.
func TestAccessLogOption(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		log := &anchordtest.SyncBuffer{}
		srv, err := New(Config{Addr: "127.0.0.1:0", AccessLog: on, Logger: slog.New(slog.NewTextHandler(log, nil)), Registerer: prometheus.NewRegistry()})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		code, _ := get(t, "http://"+srv.Addr()+"/healthcheck")
		require.Equal(t, http.StatusOK, code)
		cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
		require.Equal(t, on, strings.Contains(log.String(), `msg=access method=GET path=/healthcheck route="GET /healthcheck" status=200`), "access log %v: %s", on, log.String())
	}
}
