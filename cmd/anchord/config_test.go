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

// TestConfigReadsOrbsEnvironment: an Orb deployment's environment changes what `anchord config`
// shows, with Orb's meaning (BATCH_WRITER_TIMEOUT in milliseconds).
func TestConfigReadsOrbsEnvironment(t *testing.T) {
	t.Parallel()
	orb := map[string]string{
		"ORB_HOST_URL": "0.0.0.0:48326", "BATCH_WRITER_TIMEOUT": "1000", "MQ_URL": "amqp://orb:secret@rabbitmq:5672/",
		"DATABASE_URL": "postgres://orb@postgres:5432/orb", "CAS_TYPE": "ipfs", "IPFS_URL": "http://ipfs:5001",
	}
	var before, after, stderr bytes.Buffer
	require.Equal(t, 0, runWithEnv([]string{"config"}, func(string) (string, bool) { return "", false }, &before, &stderr), stderr.String())
	require.Equal(t, 0, runWithEnv([]string{"config"}, func(k string) (string, bool) { v, ok := orb[k]; return v, ok }, &after, &stderr), stderr.String())
	for _, want := range []string{
		`--host-url="0.0.0.0:48326"`, `--batch-writer-timeout="1s"`, `--mq-url="amqp://orb:xxxxx@rabbitmq:5672/"`,
		`--database-url="postgres://orb@postgres:5432/orb"`, `--cas-type="ipfs"`, `--ipfs-url="http://ipfs:5001"`,
	} {
		require.NotContains(t, before.String(), want)
		require.Contains(t, after.String(), want)
	}
}
