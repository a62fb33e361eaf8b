package main

import (
	"bytes"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

func TestConfigPrintsTheEffectiveConfiguration(t *testing.T) {
	t.Parallel()
	env := func(k string) (string, bool) {
		if k == "ANCHORD_BATCH_WRITER_TIMEOUT" {
			return "750ms", true
		}
		return "", false
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runWithEnv([]string{"config", "--did-method", "ion"}, env, &stdout, &stderr))
	require.Contains(t, stdout.String(), `--did-method="ion"`)
	require.Contains(t, stdout.String(), `--batch-writer-timeout="750ms"`, "the environment counts")

	stdout.Reset()
	require.Equal(t, 2, runWithEnv([]string{"config", "--did-method", "ION!"}, env, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--did-method")
	require.Empty(t, stdout.String())
}

// TestServeRefusesAMissingDatabaseAtOnce: a database the server says does not exist is reported
// and exits, instead of being waited for like one that does not answer yet.
func TestServeRefusesAMissingDatabaseAtOnce(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(anchordtest.DatabaseURL(t))
	require.NoError(t, err)
	u.Path = "/anchord_no_such_database"
	var stdout, stderr anchordtest.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"serve", "--host-url", "127.0.0.1:0", "--database-url", u.String()}, &stdout, &stderr)
	}()
	require.Equal(t, 1, anchordtest.WaitOrTimeout(t, done, 20*time.Second))
	require.Contains(t, stderr.String(), "anchord failed")
	require.Contains(t, stderr.String(), "does not exist")
}
