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

// TestStartWaitingAnswers: while an instance waits for a dependency that is not there (its URL
// names a closed port: RabbitMQ for a cluster instance, PostgreSQL for any), its API port
// answers at once with 503 and what it waits for, instead of holding the connection; a stop
// during the wait says what it was waiting for.
func TestStartWaitingAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what string
		args []string
	}{
		{"RabbitMQ", []string{"--database-url", storetest.PostgresURL(t), "--mq-url", "amqp://guest:guest@" + anchordtest.FreeAddr(t) + "/"}},
		{"PostgreSQL", []string{"--database-url", "postgres://postgres@" + anchordtest.FreeAddr(t) + "/anchord?sslmode=disable"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			addr := anchordtest.FreeAddr(t)
			p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Addr: addr, Args: append([]string{"serve", "--host-url", addr}, tc.args...)})
			waiting := map[string]string{"RabbitMQ": "waiting for RabbitMQ", "PostgreSQL": "waiting for the database"}[tc.what]
			anchordtest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() bool {
				return strings.Contains(p.Log(), waiting)
			}, "the instance did not start waiting for %s", tc.what)

			client := &http.Client{Timeout: 5 * time.Second}
			for _, path := range []string{"/healthcheck", "/sidetree/v1/operations"} {
				start := time.Now()
				resp, err := client.Get("http://" + addr + path)
				require.NoError(t, err, "%s answers within 5 s while the start waits", path)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s: %s", path, body)
				require.Contains(t, string(body), tc.what, path)
				t.Logf("%s during the wait: %d in %s: %s", path, resp.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(body)))
				if path == "/healthcheck" {
					var h struct {
						Status     string `json:"status"`
						WaitingFor string `json:"waiting_for"`
					}
					require.NoError(t, json.Unmarshal(body, &h))
					require.Equal(t, "starting", h.Status)
					require.Equal(t, tc.what, h.WaitingFor)
				}
			}

			p.Signal(syscall.SIGTERM)
			code, err := p.Wait(15 * time.Second)
			require.NoError(t, err, "a stop during the wait ends the process")
			require.NotEqual(t, 0, code, "the start did not complete")
			require.Contains(t, p.Log(), "stopped while waiting for "+tc.what)
			require.NotContains(t, p.Log(), "startup deadline")
		})
	}
}
