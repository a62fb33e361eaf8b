// Package anchordtest holds helpers shared by every package's tests: the goleak TestMain wrapper,
// a slog logger that writes to t.Log, WaitOrTimeout, and the environment-gated URLs of the real
// services (PostgreSQL, RabbitMQ, MariaDB) and the path of the IPFS node binary that integration tests use.
//
// It is imported only from _test.go files and from other *test packages.
package anchordtest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Environment variables read by tests. The README's test command (scripts/test) sets them all
// but EnvArtifacts.
const (
	EnvDatabaseURL     = "ANCHORD_TEST_DATABASE_URL"
	EnvAMQPURL         = "ANCHORD_TEST_AMQP_URL"
	EnvIPFSBin         = "ANCHORD_TEST_IPFS_BIN"
	EnvLitewitnessBin  = "ANCHORD_TEST_LITEWITNESS_BIN"
	EnvChromium        = "ANCHORD_TEST_CHROMIUM"
	EnvMariaDBURL      = "ANCHORD_TEST_MARIADB_URL"
	EnvRequireServices = "ANCHORD_TEST_REQUIRE_SERVICES"
	// EnvOrbBin names an Orb server binary (trustbloc/orb's cmd/orb-server) for the interop
	// tests; EnvRequireOrb makes its absence fail them. Orb is not one of the services
	// scripts/test provides, so EnvRequireServices does not require it.
	EnvOrbBin     = "ANCHORD_TEST_ORB_BIN"
	EnvRequireOrb = "ANCHORD_TEST_REQUIRE_ORB"
	// EnvArtifacts names a directory where tests leave files for people to look at
	// (screenshots); without it they go to the test's temporary directory.
	EnvArtifacts = "ANCHORD_TEST_ARTIFACTS"
)

// WrapTestMain runs the package's tests and then fails if any goroutine leaked.
func WrapTestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The pgx pool's background health checker and the sqlite driver's connection cleaner
		// stop asynchronously after Close returns.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

// RequireServices reports whether a missing service must fail the test instead of skipping it.
func RequireServices() bool {
	v := strings.TrimSpace(os.Getenv(EnvRequireServices))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// DatabaseURL returns the PostgreSQL URL for tests. Without one it skips the test, or fails it
// when ANCHORD_TEST_REQUIRE_SERVICES is set.
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	return serviceURL(tb, EnvDatabaseURL, "PostgreSQL")
}

// AMQPURL returns the RabbitMQ URL for tests, skipping or failing like DatabaseURL.
func AMQPURL(tb testing.TB) string {
	tb.Helper()
	return serviceURL(tb, EnvAMQPURL, "RabbitMQ")
}

// MariaDBURL returns the URL of the MariaDB server for tests (mysql://user@host:port/, no
// database: tests create their own), skipping or failing like DatabaseURL.
func MariaDBURL(tb testing.TB) string {
	tb.Helper()
	return serviceURL(tb, EnvMariaDBURL, "MariaDB")
}

// IPFSBin returns the path of the Kubo binary that servicetest runs as a private IPFS node
// (scripts/ipfs-node builds it), skipping or failing like DatabaseURL when it is not set. A path
// that is set but is not an executable file fails the test: the setup is broken, not absent.
func IPFSBin(tb testing.TB) string {
	tb.Helper()
	bin := serviceURL(tb, EnvIPFSBin, "Kubo (IPFS) binary")
	info, err := os.Stat(bin)
	if err != nil {
		tb.Fatalf("%s=%s: %v", EnvIPFSBin, bin, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		tb.Fatalf("%s=%s is not an executable file", EnvIPFSBin, bin)
	}
	return bin
}

// LitewitnessBin returns the path of the litewitness binary that servicetest runs as an
// independent C2SP tlog-witness (scripts/litewitness builds it), skipping or failing like
// IPFSBin.
func LitewitnessBin(tb testing.TB) string {
	tb.Helper()
	bin := serviceURL(tb, EnvLitewitnessBin, "litewitness binary")
	info, err := os.Stat(bin)
	if err != nil {
		tb.Fatalf("%s=%s: %v", EnvLitewitnessBin, bin, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		tb.Fatalf("%s=%s is not an executable file", EnvLitewitnessBin, bin)
	}
	return bin
}

// RequireOrb reports whether the Orb interop tests must run: a missing Orb binary, or Orb's
// address taken, fails them instead of skipping them.
func RequireOrb() bool {
	v := strings.TrimSpace(os.Getenv(EnvRequireOrb))
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// OrbBin returns the Orb server binary of the interop tests. Without one it skips the test, or
// fails it when ANCHORD_TEST_REQUIRE_ORB is set; a path that is not an executable file fails it.
func OrbBin(tb testing.TB) string {
	tb.Helper()
	bin := strings.TrimSpace(os.Getenv(EnvOrbBin))
	if bin == "" {
		if RequireOrb() {
			tb.Fatalf("Orb is required (%s=1) but %s is not set", EnvRequireOrb, EnvOrbBin)
		}
		tb.Skipf("no Orb server: set %s to an orb-server built from trustbloc/orb's cmd/orb-server (README: Orb interop tests)", EnvOrbBin)
	}
	info, err := os.Stat(bin)
	if err != nil {
		tb.Fatalf("%s=%s: %v", EnvOrbBin, bin, err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		tb.Fatalf("%s=%s is not an executable file", EnvOrbBin, bin)
	}
	return bin
}

// ChromiumBin returns the Chromium binary that browser tests drive headless: $ANCHORD_TEST_CHROMIUM,
// else chromium on PATH (Debian's package, which scripts/test installs). Without either it skips
// the test, or fails it when ANCHORD_TEST_REQUIRE_SERVICES is set.
func ChromiumBin(tb testing.TB) string {
	tb.Helper()
	if bin := strings.TrimSpace(os.Getenv(EnvChromium)); bin != "" {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("%s=%s: %v", EnvChromium, bin, err)
		}
		return bin
	}
	if bin, err := exec.LookPath("chromium"); err == nil {
		return bin
	}
	if RequireServices() {
		tb.Fatalf("Chromium is required (%s=1) but neither %s is set nor chromium on PATH", EnvRequireServices, EnvChromium)
	}
	tb.Skipf("Chromium not found: install Debian's chromium or set %s (scripts/test does)", EnvChromium)
	return ""
}

// ArtifactDir returns the directory for files a test leaves for people to look at:
// $ANCHORD_TEST_ARTIFACTS/<test name> when that is set (created), else a temporary directory.
func ArtifactDir(tb testing.TB) string {
	tb.Helper()
	root := strings.TrimSpace(os.Getenv(EnvArtifacts))
	if root == "" {
		return tb.TempDir()
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("%s: %v", EnvArtifacts, err)
	}
	return dir
}

func serviceURL(tb testing.TB, env, what string) string {
	tb.Helper()
	if u := strings.TrimSpace(os.Getenv(env)); u != "" {
		return u
	}
	if RequireServices() {
		tb.Fatalf("%s is required (%s=1) but %s is not set", what, EnvRequireServices, env)
	}
	tb.Skipf("%s not configured: set %s to run this test (scripts/test does)", what, env)
	return ""
}

// Logger returns a slog.Logger that writes through t.Log, so output appears only for failing
// or verbose tests and is attributed to the right test. Set ANCHORD_TEST_LOG=debug for debug
// level.
func Logger(tb testing.TB) *slog.Logger {
	tb.Helper()
	level := slog.LevelInfo
	if strings.EqualFold(os.Getenv("ANCHORD_TEST_LOG"), "debug") {
		level = slog.LevelDebug
	}
	w := &tbWriter{tb: tb}
	tb.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// DiscardLogger returns a logger that writes nothing; for benchmarks.
func DiscardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// tbWriter forwards log lines to t.Log until the test ends; writes after that are dropped,
// because t.Log panics once a test has completed and background goroutines may still log
// during their shutdown.
type tbWriter struct {
	mu   sync.Mutex
	tb   testing.TB
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.tb.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *tbWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// WaitOrTimeout waits for a value on ch or fails the test after timeout.
func WaitOrTimeout[T any](tb testing.TB, ch <-chan T, timeout time.Duration) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(timeout):
		tb.Fatalf("WaitOrTimeout: nothing received within %s", timeout)
	}
	var zero T
	return zero
}

// Eventually polls cond every interval until it returns true or fails the test after timeout.
// It is for conditions on external systems (a broker queue draining, a database row appearing)
// that offer no signal to wait on; code under our control uses testsignal instead.
func Eventually(tb testing.TB, timeout, interval time.Duration, cond func() bool, msgAndArgs ...any) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			if len(msgAndArgs) > 0 {
				if format, ok := msgAndArgs[0].(string); ok {
					tb.Fatalf("condition not met within %s: "+format, append([]any{timeout}, msgAndArgs[1:]...)...)
				}
			}
			tb.Fatalf("condition not met within %s", timeout)
		}
		time.Sleep(interval)
	}
}

// Context returns a context cancelled when the test ends or after timeout, whichever is first.
func Context(tb testing.TB, timeout time.Duration) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	tb.Cleanup(cancel)
	return ctx
}
