package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/logmonitor"
	"github.com/anchord/anchord/internal/param"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/witness"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, Default(), c)
	require.Equal(t, HostURLDefault, c.HostURL)
	require.Equal(t, DataDirDefault, c.DataDir)
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"--host-url", "127.0.0.1:9999"}, env(map[string]string{
		"ANCHORD_HOST_URL":          "127.0.0.1:7777",
		"ANCHORD_HTTP_READ_TIMEOUT": "3s",
	}), nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9999", c.HostURL, "flag wins over environment")
	require.Equal(t, 3*time.Second, c.HTTP.ReadTimeout, "environment wins over default")
}

func TestLoadLimits(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{"--http-max-connections", "64", "--http-rate-limit", "2.5", "--max-operations-per-did", "50"},
		env(map[string]string{"ANCHORD_HTTP_RATE_BURST": "10", "ANCHORD_MAX_DOCUMENT_BYTES": "4096"}), nil)
	require.NoError(t, err)
	require.Equal(t, HTTPConfig{
		ReadTimeout: httpapi.ReadTimeoutDefault, WriteTimeout: httpapi.WriteTimeoutDefault, IdleTimeout: httpapi.IdleTimeoutDefault,
		MaxBodyBytes: httpapi.MaxBodyBytesDefault, MaxConnections: 64, RateLimit: 2.5, RateBurst: 10,
	}, c.HTTP)
	p := c.SidetreeProfile()
	require.Equal(t, 50, p.MaxOperationsPerDID)
	require.Equal(t, 4096, p.MaxDocumentBytes)

	d := Default()
	require.Equal(t, httpapi.MaxConnectionsDefault, d.HTTP.MaxConnections)
	require.Zero(t, d.HTTP.RateLimit, "rate limiting is off by default")
}

func TestLoadOrbProfile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--did-method", "orb", "--external-endpoint", "https://anchord.example.com"}, nil},
		{nil, map[string]string{"DID_NAMESPACE": "did:orb", "ORB_EXTERNAL_ENDPOINT": "https://anchord.example.com"}},
		{nil, map[string]string{"DID_NAMESPACE": "orb", "ORB_EXTERNAL_ENDPOINT": "https://anchord.example.com/"}},
	} {
		c, err := Load(tc.args, env(tc.env), nil)
		require.NoError(t, err)
		p := c.SidetreeProfile()
		require.Equal(t, sidetree.OrbProfile("https:anchord.example.com"), p, "%v %v", tc.args, tc.env)
		require.Equal(t, 2500, p.MaxOperationSize)
		require.Equal(t, 1700, p.MaxDeltaSize)
	}
	c, err := Load([]string{"--did-method", "orb", "--signature-algorithms", "EdDSA,ES256"}, env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, []sidetree.Algorithm{sidetree.EdDSA, sidetree.ES256}, c.SidetreeProfile().Algorithms, "narrowed")
	_, err = Load([]string{"--did-method", "ion", "--signature-algorithms", "ES256"}, env(nil), nil)
	require.ErrorContains(t, err, "did-method", "ES256 is did:orb's only")
	c, err = Load([]string{"--did-method", "ion"}, env(nil), nil)
	require.NoError(t, err)
	require.False(t, c.SidetreeProfile().Orb)
}

func TestLoadAllowedOrigins(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(map[string]string{"ALLOWED_ORIGINS": "https://a.example, did:web:b.example,,"}), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"https://a.example", "did:web:b.example"}, c.AllowedOriginList(), "Orb's variable, split and trimmed")
	c, err = Load([]string{"--allowed-origins", "*"}, env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"*"}, c.AllowedOriginList())
	require.Empty(t, Default().AllowedOriginList(), "empty: this domain only")
}

func TestLoadOutboundGuard(t *testing.T) {
	t.Parallel()
	d := Default()
	require.Empty(t, d.Federation.PeerAllowedAddresses, "public addresses only by default")
	require.Equal(t, egress.MaxRequestsDefault, d.Federation.PeerMaxRequests)
	require.Equal(t, egress.MaxRequestsPerHostDefault, d.Federation.PeerMaxRequestsPerHost)
	c, err := Load([]string{"--peer-allowed-addresses", "127.0.0.1:8443,10.0.0.0/8", "--peer-max-requests-per-host", "4"},
		env(map[string]string{"ANCHORD_PEER_MAX_REQUESTS": "32"}), nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8443,10.0.0.0/8", c.Federation.PeerAllowedAddresses)
	require.Equal(t, 32, c.Federation.PeerMaxRequests)
	require.Equal(t, 4, c.Federation.PeerMaxRequestsPerHost)
	var group []slog.Attr
	for _, g := range c.LogGroups() {
		if g[0].Value.String() == "federation" {
			group = g
		}
	}
	require.Contains(t, fmt.Sprint(group), "peer_allowed_addresses=127.0.0.1:8443,10.0.0.0/8", "logged with the federation group")
}

func TestLoadWitnessLog(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(nil), nil)
	require.NoError(t, err)
	require.False(t, c.WitnessLog.Enabled, "off by default")
	require.Equal(t, logmonitor.IntervalDefault, c.WitnessLog.MonitoringInterval)
	require.Equal(t, witness.LogProofIntervalDefault, c.Witness.ProofMonitorInterval)
	c, err = Load([]string{"--vct-enabled", "--vct-log-monitoring-interval", "3s", "--vct-monitoring-interval", "4s"}, env(nil), nil)
	require.NoError(t, err)
	require.True(t, c.WitnessLog.Enabled, "Orb's flag name")
	require.Equal(t, 3*time.Second, c.WitnessLog.MonitoringInterval)
	require.Equal(t, 4*time.Second, c.Witness.ProofMonitorInterval, "Orb's flag name")
	c, err = Load(nil, env(map[string]string{"VCT_PROOF_MONITORING_INTERVAL": "5s"}), nil)
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, c.Witness.ProofMonitorInterval, "Orb's variable")
	c, err = Load(nil, env(map[string]string{"VCT_ENABLED": "true"}), nil)
	require.NoError(t, err)
	require.True(t, c.WitnessLog.Enabled, "Orb's variable")
	c, err = Load([]string{"--witness-log", "--database-url", "postgres://db/x", "--mq-url", "amqp://mq/",
		"--witness-log-mariadb-url", "mysql://root:pw@db:3306/log?timeout=5s"}, env(nil), nil)
	require.NoError(t, err, "a cluster with the log in MariaDB")
	require.Equal(t, "mysql://root:pw@db:3306/log?timeout=5s", c.WitnessLog.MariaDBURL)
}

func TestLoadErrorsNameTheParameter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown flag", []string{"--no-such-thing"}, nil, "unknown parameter --no-such-thing"},
		{"malformed database URL", []string{"--database-url", "postgres//nope"}, nil, "--database-url"},
		{"wrong scheme", []string{"--mq-url", "http://127.0.0.1"}, nil, "--mq-url"},
		{"negative duration", []string{"--http-read-timeout", "-1s"}, nil, "--http-read-timeout"},
		{"unparsable duration", []string{"--shutdown-timeout", "soon"}, nil, "--shutdown-timeout"},
		{"bad env", nil, map[string]string{"ANCHORD_DATABASE_MAX_CONNS": "many"}, "for ANCHORD_DATABASE_MAX_CONNS (--database-max-conns): not an integer"},
		{"bad host", []string{"--host-url", "localhost"}, nil, "--host-url"},
		{"stray argument", []string{"extra"}, nil, "unexpected argument"},
		{"missing value", []string{"--host-url"}, nil, "--host-url needs a value"},
		{"no connections", []string{"--http-max-connections", "0"}, nil, "--http-max-connections"},
		{"negative rate", []string{"--http-rate-limit", "-1"}, nil, "--http-rate-limit"},
		{"infinite rate", []string{"--http-rate-limit", "+Inf"}, nil, "--http-rate-limit"},
		{"negative burst", nil, map[string]string{"ANCHORD_HTTP_RATE_BURST": "-2"}, "--http-rate-burst"},
		{"tiny documents", []string{"--max-document-bytes", "10"}, nil, "--max-document-bytes"},
		{"no operations", []string{"--max-operations-per-did", "0"}, nil, "--max-operations-per-did"},
		{"huge origin", []string{"--allowed-origins", "https://" + strings.Repeat("a", 2000)}, nil, "--allowed-origins"},
		{"log database without the log", []string{"--witness-log-mariadb-url", "mysql://root@db/log"}, nil, "--witness-log-mariadb-url"},
		{"log database of another kind", []string{"--witness-log", "--witness-log-mariadb-url", "postgres://db/log"}, nil, "--witness-log-mariadb-url"},
		{"log database unnamed", []string{"--witness-log", "--witness-log-mariadb-url", "mysql://root@db/"}, nil, "--witness-log-mariadb-url"},
		{"cluster log in files", []string{"--witness-log", "--database-url", "postgres://db/x", "--mq-url", "amqp://mq/"}, nil, "--witness-log"},
		{"log monitor never runs", []string{"--witness-log-monitoring-interval", "0s"}, nil, "--witness-log-monitoring-interval"},
		{"checkpoints too often", []string{"--witness-log", "--witness-log-checkpoint-interval", "50ms"}, nil, "--witness-log-checkpoint-interval"},
		{"checkpoints too often for MariaDB", []string{"--witness-log", "--witness-log-mariadb-url", "mysql://root@127.0.0.1:3306/log",
			"--witness-log-checkpoint-interval", "500ms"}, nil, "at least 1s"},
		{"proof monitor never runs", []string{"--vct-monitoring-interval", "0s"}, nil, "--vct-monitoring-interval"},
		{"allowed address that is a name", []string{"--peer-allowed-addresses", "localhost:8080"}, nil, "--peer-allowed-addresses"},
		{"allowed prefix malformed", nil, map[string]string{"ANCHORD_PEER_ALLOWED_ADDRESSES": "10.0.0.0/40"}, "for ANCHORD_PEER_ALLOWED_ADDRESSES (--peer-allowed-addresses)"},
		{"no outbound requests", []string{"--peer-max-requests", "0"}, nil, "--peer-max-requests"},
		{"no outbound requests per host", []string{"--peer-max-requests-per-host", "0"}, nil, "--peer-max-requests-per-host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(tc.args, env(tc.env), nil)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	c, err := Load([]string{
		"--database-url", "postgres://user:hunter2@db:5432/anchord",
		"--mq-url", "amqp://guest:s3cret@mq:5672/",
	}, env(nil), nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "config", c)
	require.NotContains(t, buf.String(), "hunter2")
	require.NotContains(t, buf.String(), "s3cret")
	require.Contains(t, buf.String(), "database_url=postgres://user:xxxxx@db:5432/anchord")

	c, err = Load([]string{"--admin-token", "letmein"}, env(nil), nil)
	require.NoError(t, err)
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "config", c)
	require.NotContains(t, buf.String(), "letmein")
	require.Contains(t, buf.String(), "admin_token=<redacted>")

	_, err = Load([]string{"--database-url", "mysql://u:hunter2@x/y"}, env(nil), nil)
	require.ErrorContains(t, err, "--database-url")
	require.NotContains(t, err.Error(), "hunter2")
}

func TestHelpListsEveryParameter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	_, err := Load([]string{"--help"}, env(nil), &out)
	require.ErrorIs(t, err, param.ErrHelp)
	c := Default()
	for _, p := range c.params() {
		require.Contains(t, out.String(), "--"+p.Name())
		require.Contains(t, out.String(), param.EnvName(p.Name()))
	}
	require.Contains(t, out.String(), HostURLDefault)
	require.True(t, strings.Contains(out.String(), "10s"), "durations shown in Go syntax")
}

// TestSecretsAreRedactedInLogs: a password in a URL's user information or query, and a ledger
// URL's credentials, never reach a JSON log line.
func TestSecretsAreRedactedInLogs(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.DatabaseURL = "postgres://anchord:hunter2@db:5432/anchord?sslmode=verify-full&password=hunter3"
	cfg.MQURL = "amqp://user:hunter4@mq:5672/"
	cfg.LedgerURL = "https://op:hunter5@ledger:8008/?token=hunter6"
	cfg.AdminToken = "hunter7"
	cfg.AuthTokens = "admin=hunter8"
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	for _, g := range cfg.LogGroups() {
		logger.LogAttrs(context.Background(), slog.LevelInfo, "configuration", g...)
	}
	out := buf.String()
	for _, secret := range []string{"hunter2", "hunter3", "hunter4", "hunter5", "hunter6", "hunter7", "hunter8"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, out, `"database_url":"postgres://anchord:xxxxx@db:5432/anchord?password=xxxxx&sslmode=verify-full"`)
}

// TestConfigurationIsLoggedWithTypes: in a JSON log line numbers are numbers, booleans are
// booleans and durations are Go duration text, as an operator's log pipeline would query them.
func TestConfigurationIsLoggedWithTypes(t *testing.T) {
	t.Parallel()
	cfg := Default()
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	for _, g := range cfg.LogGroups() {
		logger.LogAttrs(context.Background(), slog.LevelInfo, "configuration", g...)
	}
	values := map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &obj), line)
		maps.Copy(values, obj)
	}
	require.Equal(t, float64(65536), values["max_document_bytes"])
	require.Equal(t, 1.5, values["mq_redelivery_multiplier"])
	require.Equal(t, false, values["access_log"])
	require.Equal(t, "2s", values["batch_writer_timeout"])
	require.Equal(t, "sidetree", values["did_method"])
}

// TestLoadOrbNames: Orb's environment variables and flag names carry an Orb deployment's
// settings over with Orb's meaning (BATCH_WRITER_TIMEOUT in milliseconds); Orb's parameters
// anchord has no knob for fail the start with what to use instead, by flag or by variable.
func TestLoadOrbNames(t *testing.T) {
	t.Parallel()
	c, err := Load(nil, env(map[string]string{
		"ORB_HOST_URL": "127.0.0.1:9400", "BATCH_WRITER_TIMEOUT": "1500", "MQ_URL": "amqp://mq:5672/",
		"DATABASE_URL": "postgres://db/orb", "CAS_TYPE": "ipfs", "IPFS_URL": "http://127.0.0.1:5001", "IPFS_TIMEOUT": "7s",
		"MQ_OPQUEUE_POOL": "9", "MQ_OBSERVER_POOL": "3", "MQ_PUBLISHER_POOL": "11", "MQ_MAX_CONNECTION_CHANNELS": "99",
		"MQ_REDELIVERY_MAX_ATTEMPTS": "4", "MQ_REDELIVERY_INITIAL_INTERVAL": "3s", "MQ_REDELIVERY_MULTIPLIER": "2.5", "MQ_REDELIVERY_MAX_INTERVAL": "2m",
		"OP_QUEUE_TASK_MONITOR_INTERVAL": "4s", "OP_QUEUE_TASK_EXPIRATION": "40s", "OP_QUEUE_MAX_OPS_TO_REPOST": "77", "OP_QUEUE_OPERATION_LIFESPAN": "2h",
		"TASK_MANAGER_CHECK_INTERVAL": "6s", "DATA_EXPIRY_CHECK_INTERVAL": "2m", "VCT_PROOF_MONITORING_INTERVAL": "8s",
		"CID_VERSION": "1", "HTTP_TIMEOUT": "12s", "SERVER_IDLE_TIMEOUT": "33s",
	}), nil)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:9400", c.HostURL)
	require.Equal(t, 1500*time.Millisecond, c.BatchWriterTimeout, "Orb's BATCH_WRITER_TIMEOUT is milliseconds")
	require.Equal(t, "amqp://mq:5672/", c.MQURL)
	require.Equal(t, "postgres://db/orb", c.DatabaseURL)
	require.Equal(t, "ipfs", c.CASType)
	require.Equal(t, "http://127.0.0.1:5001", c.IPFSURL)
	require.Equal(t, 7*time.Second, c.IPFSTimeout)
	require.Equal(t, []int{9, 3, 11, 99, 4}, []int{c.MQOpQueuePool, c.MQObserverPool, c.MQPublisherChannelPoolSize, c.MQMaxConnectionChannels, c.RedeliveryMaxAttempts})
	require.Equal(t, 3*time.Second, c.RedeliveryInitialInterval)
	require.InDelta(t, 2.5, c.RedeliveryMultiplier, 0)
	require.Equal(t, 2*time.Minute, c.RedeliveryMaxInterval)
	require.Equal(t, []time.Duration{4 * time.Second, 40 * time.Second, 2 * time.Hour, 6 * time.Second, 2 * time.Minute, 8 * time.Second, 12 * time.Second, 33 * time.Second},
		[]time.Duration{c.OpQueueTaskMonitorInterval, c.OpQueueTaskExpiration, c.OpQueueOperationLifespan, c.TaskManagerCheckInterval,
			c.DataExpiryCheckInterval, c.Witness.ProofMonitorInterval, c.Federation.RequestTimeout, c.HTTP.IdleTimeout})
	require.Equal(t, 77, c.OpQueueMaxOpsToRepost)
	require.Equal(t, 1, c.CASCIDVersion)

	// Orb's resolution from a DID's anchor origin, and what an origin lists for it: off by
	// default, as at Orb.
	f := Default().Federation
	require.False(t, f.ResolveFromAnchorOrigin || f.EnableUnpublishedOperationStore || f.IncludeUnpublishedOperations || f.IncludePublishedOperations)
	c, err = Load(nil, env(map[string]string{
		"RESOLVE_FROM_ANCHOR_ORIGIN": "true", "UNPUBLISHED_OPERATION_STORE_ENABLED": "true",
		"INCLUDE_UNPUBLISHED_OPERATIONS_IN_METADATA": "true", "INCLUDE_PUBLISHED_OPERATIONS_IN_METADATA": "true",
	}), nil)
	require.NoError(t, err)
	f = c.Federation
	require.True(t, f.ResolveFromAnchorOrigin && f.EnableUnpublishedOperationStore && f.IncludeUnpublishedOperations && f.IncludePublishedOperations)
	c, err = Load([]string{"--resolve-from-anchor-origin"}, env(nil), nil)
	require.NoError(t, err)
	require.True(t, c.Federation.ResolveFromAnchorOrigin)

	// anchord's own names win over Orb's, and a Go duration is taken too.
	c, err = Load(nil, env(map[string]string{"BATCH_WRITER_TIMEOUT": "1500", "ANCHORD_BATCH_WRITER_TIMEOUT": "2s"}), nil)
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.BatchWriterTimeout)
	c, err = Load([]string{"--batch-writer-timeout", "60000"}, env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, time.Minute, c.BatchWriterTimeout, "Orb's flag value, in milliseconds")

	// The seed's and Orb's flag names.
	c, err = Load([]string{"--op-queue-pool", "6", "--op-queue-repost-initial-delay", "1s", "--op-queue-repost-max-delay", "9s",
		"--op-queue-repost-multiplier", "3", "--vct-proof-monitoring-interval", "2s", "--cid-version", "1", "--ipfs-timeout", "5s",
		"--http-timeout", "4s", "--server-idle-timeout", "50s"}, env(nil), nil)
	require.NoError(t, err)
	require.Equal(t, 6, c.MQOpQueuePool)
	require.Equal(t, []time.Duration{time.Second, 9 * time.Second, 2 * time.Second, 5 * time.Second, 4 * time.Second, 50 * time.Second},
		[]time.Duration{c.RedeliveryInitialInterval, c.RedeliveryMaxInterval, c.Witness.ProofMonitorInterval, c.IPFSTimeout, c.Federation.RequestTimeout, c.HTTP.IdleTimeout})
	require.InDelta(t, 3.0, c.RedeliveryMultiplier, 0)

	// Orb's knobs anchord does not have are refused, each with what to use instead.
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--http-dial-timeout", "3s"}, nil, "--peer-request-timeout"},
		{[]string{"--server-read-header-timeout", "3s"}, nil, "--http-read-timeout"},
		{[]string{"--database-timeout", "3s"}, nil, "connect_timeout="},
		{[]string{"--sync-timeout", "3"}, nil, "nothing to time out"},
		{[]string{"--mq-connect-max-retries", "25"}, nil, "until it is stopped"},
		{nil, map[string]string{"MQ_CONNECT_MAX_RETRIES": "25"}, "MQ_CONNECT_MAX_RETRIES: --mq-connect-max-retries is Orb's"},
		{nil, map[string]string{"MQ_INBOX_POOL": "5"}, "inbox processor"},
		{nil, map[string]string{"OP_QUEUE_MAX_CONTIGUOUS_OPERATIONS_WITH_ERR": "5"}, "de-fragmentation"},
	} {
		_, err := Load(tc.args, env(tc.env), nil)
		require.ErrorContains(t, err, tc.want, "%v %v", tc.args, tc.env)
		require.ErrorContains(t, err, "anchord does not have it")
	}
	// A value Orb's variable set, that validation refuses, is named by that variable.
	_, err = Load(nil, env(map[string]string{"DATABASE_URL": "mongodb://mongo:27017"}), nil)
	require.ErrorContains(t, err, `invalid value "mongodb://mongo:27017" for DATABASE_URL (--database-url)`)

	var help bytes.Buffer
	_, err = Load([]string{"--help"}, env(nil), &help)
	require.ErrorIs(t, err, param.ErrHelp)
	require.Contains(t, help.String(), "--mq-connect-max-retries", "refused names are listed apart")
	var shown bytes.Buffer
	Default().Write(&shown)
	require.NotContains(t, shown.String(), "mq-connect-max-retries", "and never shown as configuration")
}
