package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store/storetest"
)

// TestStartWaitingForTheBrokerAnswers: while a cluster instance waits for a broker that is not
// there (its URL names a closed port), its API port answers /healthcheck at once with 503 and
// what it waits for, instead of holding the connection; a stop during the wait says so.
func TestStartWaitingForTheBrokerAnswers(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Addr: addr, Args: []string{
		"serve", "--host-url", addr, "--database-url", storetest.PostgresURL(t),
		"--mq-url", "amqp://guest:guest@" + anchordtest.FreeAddr(t) + "/",
	}})
	anchordtest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() bool {
		return strings.Contains(p.Log(), "waiting for RabbitMQ")
	}, "the instance did not start waiting for RabbitMQ")

	client := &http.Client{Timeout: 5 * time.Second}
	for _, path := range []string{"/healthcheck", "/sidetree/v1/operations"} {
		start := time.Now()
		resp, err := client.Get("http://" + addr + path)
		require.NoError(t, err, "%s answers within 5 s while the start waits", path)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", path, body)
		require.Contains(t, string(body), "RabbitMQ", path)
		t.Logf("%s during the broker wait: %d in %s: %s", path, resp.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(body)))
		if path == "/healthcheck" {
			var h struct {
				Status     string `json:"status"`
				WaitingFor string `json:"waiting_for"`
			}
			require.NoError(t, json.Unmarshal(body, &h))
			require.Equal(t, "starting", h.Status)
			require.Equal(t, "RabbitMQ", h.WaitingFor)
		}
	}

	p.Signal(syscall.SIGTERM)
	code, err := p.Wait(15 * time.Second)
	require.NoError(t, err, "a stop during the wait ends the process")
	require.NotEqual(t, 0, code, "the start did not complete")
	require.Contains(t, p.Log(), "stopped while waiting for RabbitMQ")
	require.NotContains(t, p.Log(), "startup deadline")
}
