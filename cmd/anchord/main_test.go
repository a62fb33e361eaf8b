package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/servicetest"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestMain(m *testing.M) { anchordtest.WrapTestMain(m) }

func TestBadConfigurationExitsWithOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--bogus"}, "--bogus"},
		{[]string{"serve", "--database-url", "postgres//db"}, "--database-url"},
		{[]string{"serve", "--database-url", "::not a url"}, "--database-url"},
		{[]string{"serve", "--mq-url", "amqp://"}, "--mq-url"},
		{[]string{"serve", "--shutdown-timeout", "-3s"}, "--shutdown-timeout"},
		{[]string{"serve", "--http-read-timeout", "ten"}, "--http-read-timeout"},
		{[]string{"nonsense"}, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			require.NotEqual(t, 0, code)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			require.Contains(t, first, tc.want)
		})
	}
}

func TestServeHelpListsParameters(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"serve", "--help"}, &stdout, &stderr))
	for _, p := range []string{"--host-url", "ANCHORD_HOST_URL", "127.0.0.1:8080", "--data-dir", "./data", "--database-url", "--mq-url"} {
		require.Contains(t, stdout.String(), p)
	}
}

var stageLine = regexp.MustCompile(`msg="shutdown: stopping stage" component=supervisor stage=(\w+)`)

// checkLifecycle asserts the foundation's must-shows on a running process: healthy, metrics
// with anchord_ series, and on signal an exit 0 within 5 s with the stages stopped in order.
func checkLifecycle(t *testing.T, p *anchordtest.Process, sig syscall.Signal) {
	t.Helper()
	resp, err := http.Get("http://" + p.Addr + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "anchord_build_info{")
	require.Contains(t, string(body), "anchord_db_pool_max_connections")
	require.Contains(t, string(body), `anchord_http_requests_total{code="200",method="GET",route="GET /healthcheck"}`)

	p.Signal(sig)
	code, err := p.Wait(5 * time.Second)
	require.NoError(t, err, "exits within 5 s of the signal")
	require.Equal(t, 0, code)

	var stages []string
	for _, m := range stageLine.FindAllStringSubmatch(p.Log(), -1) {
		stages = append(stages, m[1])
	}
	require.Equal(t, []string{"http", "consumers", "writers", "broker", "database"}, stages)
	require.Contains(t, p.Log(), `msg="anchord stopped"`)
}

func TestServeEmbedded(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	dir := t.TempDir() // empty: the default ./data is created inside it
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: []string{"serve", "--host-url", addr}, Dir: dir, Addr: addr})
	took := p.WaitHealthy(30 * time.Second)
	t.Logf("embedded: healthy %s after start", took)
	require.FileExists(t, dir+"/data/anchord.db")
	require.Regexp(t, `msg=configuration group=storage data_dir=./data database_max_conns=16 database_url="" `, p.Log(), "effective configuration logged, one line per group")
	require.Equal(t, 1, strings.Count(p.Log(), `msg="starting anchord"`))
	checkLifecycle(t, p, syscall.SIGINT)
}

func TestServePostgresHealthFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	pg := servicetest.StartPostgres(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr},
		Env:  []string{"ANCHORD_DATABASE_URL=" + pg.URL()},
		Addr: addr,
	})
	took := p.WaitHealthy(30 * time.Second)
	t.Logf("postgres: healthy %s after start", took)
	require.Contains(t, p.Log(), "store=postgres")

	pg.Stop(t)
	stopped := time.Now()
	anchordtest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		return p.Health() == http.StatusServiceUnavailable
	}, "healthcheck did not turn 503 within 10 s of stopping PostgreSQL")
	t.Logf("postgres: 503 %s after stopping the database", time.Since(stopped).Round(time.Millisecond))

	pg.Start(t)
	restarted := time.Now()
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		return p.Health() == http.StatusOK
	}, "healthcheck did not return to 200 after PostgreSQL restarted")
	t.Logf("postgres: 200 again %s after restarting the database", time.Since(restarted).Round(time.Millisecond))

	checkLifecycle(t, p, syscall.SIGTERM)
}

// TestFailFastOnWhatRetryingCannotFix: a database that does not exist, or a port in use, stops
// the process at once with one error line that says what to do, instead of a retry loop.
func TestFailFastOnWhatRetryingCannotFix(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	u, err := url.Parse(anchordtest.DatabaseURL(t))
	require.NoError(t, err)
	u.Path = "/anchord_missing_" + strings.ToLower(randomPrefix(t))
	mq, err := url.Parse(anchordtest.AMQPURL(t))
	require.NoError(t, err)
	wrongPassword, missingVhost := *mq, *mq
	wrongPassword.User = url.UserPassword(mq.User.Username(), "not-the-password")
	missingVhost.Path = "/" + randomPrefix(t)
	cluster := func(mqURL string) []string {
		return []string{"serve", "--host-url", anchordtest.FreeAddr(t), "--database-url", storetest.PostgresURL(t), "--mq-url", mqURL}
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing database", []string{"serve", "--host-url", anchordtest.FreeAddr(t), "--database-url", u.String()}, []string{"does not exist", "createdb"}},
		{"API port in use", []string{"serve", "--host-url", busy.Addr().String()}, []string{"--host-url", "address already in use"}},
		{"admin port in use", []string{"serve", "--host-url", anchordtest.FreeAddr(t), "--admin-addr", busy.Addr().String()}, []string{"--admin-addr", "address already in use"}},
		{"RabbitMQ password refused", cluster(wrongPassword.String()), []string{"--mq-url", "403 ACCESS_REFUSED", "credentials"}},
		{"RabbitMQ vhost missing", cluster(missingVhost.String()), []string{"--mq-url", "virtual host", "rabbitmqctl add_vhost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: tc.args})
			code, err := p.Wait(15 * time.Second)
			require.NoError(t, err, "exits at once")
			t.Logf("exited with %d", code)
			require.NotEqual(t, 0, code)
			var errors []string
			for _, line := range strings.Split(p.Log(), "\n") {
				if strings.Contains(line, "level=ERROR") {
					errors = append(errors, line)
				}
			}
			require.Len(t, errors, 1, p.Log())
			for _, w := range tc.want {
				require.Contains(t, errors[0], w)
			}
		})
	}
}
