// Package servicetest starts private instances of the real services (PostgreSQL, RabbitMQ, an IPFS
// node) for tests that stop, kill, restart or wipe them. Those tests must never touch the shared
// services other tests use concurrently, so each gets a server of its own, on its own port and data
// directory, removed when the test ends.
package servicetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// Postgres is a private PostgreSQL server.
type Postgres struct {
	bin     string
	dataDir string
	port    int
	runAs   *user.User // postgres refuses to run as root; nil means the current user
}

// StartPostgres initialises and starts a private PostgreSQL server. It skips the test when the
// server binaries are not installed (fails under ANCHORD_TEST_REQUIRE_SERVICES).
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin := postgresBinDir()
	if bin == "" {
		missing(t, "PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin")
	}
	p := &Postgres{bin: bin, port: anchordtest.FreePorts(t, 1)[0]}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "running as root needs a postgres user to run the server")
		p.runAs = u
	}
	// The data directory must be reachable by the postgres user, so not t.TempDir() (0700, root).
	dir, err := os.MkdirTemp("", "anchordtest-pg-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	p.dataDir = filepath.Join(dir, "data")
	t.Cleanup(func() {
		_ = p.ctl("stop", "-m", "immediate", "-w")
		_ = os.RemoveAll(dir)
	})
	if p.runAs != nil {
		uid, _ := strconv.Atoi(p.runAs.Uid)
		gid, _ := strconv.Atoi(p.runAs.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
	}
	out, err := p.command(filepath.Join(bin, "initdb"), "-D", p.dataDir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	p.Start(t)
	return p
}

// URL is the connection URL of the server's postgres database.
func (p *Postgres) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// Start starts the server and waits until it accepts connections.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c max_connections=200", p.port, p.dataDir)
	logFile := filepath.Join(filepath.Dir(p.dataDir), "server.log")
	// After a kill, backends of the old server may hold its shared memory for a moment, and
	// the new postmaster refuses to start until they are gone: retry briefly.
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = p.ctl("start", "-w", "-t", "60", "-l", logFile, "-o", opts); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("%v\nserver log:\n%s", err, log)
	}
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, p.URL())
		if err != nil {
			return false
		}
		_ = c.Close(ctx)
		return true
	}, "private postgres on port %d did not accept connections", p.port)
}

// Stop shuts the server down (fast mode: connections are terminated).
func (p *Postgres) Stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.ctl("stop", "-m", "fast", "-w", "-t", "60"), "pg_ctl stop")
}

// Kill sends SIGKILL to the postmaster, as a crash would.
func (p *Postgres) Kill(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dataDir, "postmaster.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	// A new postmaster refuses to start while the old PID still exists; its backends notice
	// the postmaster's death and exit on their own shortly after.
	anchordtest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		return syscall.Kill(pid, 0) == syscall.ESRCH
	}, "killed postmaster %d still exists", pid)
}

func (p *Postgres) ctl(args ...string) error {
	args = append(args, "-D", p.dataDir)
	out, err := p.command(filepath.Join(p.bin, "pg_ctl"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %w: %s", args[0], err, out)
	}
	return nil
}

func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = os.TempDir()
	if p.runAs != nil {
		uid, _ := strconv.Atoi(p.runAs.Uid)
		gid, _ := strconv.Atoi(p.runAs.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Env = append(os.Environ(), "HOME="+p.runAs.HomeDir)
	}
	return cmd
}

func postgresBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d
		}
	}
	return ""
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func missing(t testing.TB, what string) {
	t.Helper()
	if anchordtest.RequireServices() {
		t.Fatalf("%s required (%s=1) but not installed", what, anchordtest.EnvRequireServices)
	}
	t.Skipf("%s not installed; skipping (scripts/test installs it on Debian)", what)
}
