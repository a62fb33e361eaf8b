// Package servicetest starts private instances of the services anchord depends on, for tests
// that must break them (restart, kill) without disturbing the shared ones other tests use.
//
// It is imported only from _test.go files.
package servicetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anchord/anchord/internal/anchordtest"
)

// rabbitCommandTimeout bounds one rabbitmq-server or rabbitmqctl command: a hang guard. A node
// took over 90 s to boot on a 2-core machine at load average 25, so the waits for it allow 150 s.
const rabbitCommandTimeout = 3 * time.Minute

// RabbitMQ is a private RabbitMQ node: its own node name, ports, data and log directories, no
// plugins. It shares only epmd (the Erlang port mapper) with other nodes on the machine.
type RabbitMQ struct {
	tb     testing.TB
	node   string
	port   int
	dir    string
	server string
	ctl    string
	env    []string

	mu         sync.Mutex
	killed     bool
	appStopped bool // StopApp ran (or failed midway) and StartApp has not succeeded since
	alarm      bool // RaiseMemoryAlarm ran and ClearMemoryAlarm has not succeeded since
}

// StartRabbitMQ starts a private node and stops it, removing its files, when the test ends.
// Without rabbitmq-server installed it skips the test, or fails it when
// ANCHORD_TEST_REQUIRE_SERVICES is set.
func StartRabbitMQ(tb testing.TB) *RabbitMQ {
	tb.Helper()
	server, ctl, err := rabbitBinaries()
	if err != nil {
		if anchordtest.RequireServices() {
			tb.Fatalf("private RabbitMQ node required (%s=1): %v", anchordtest.EnvRequireServices, err)
		}
		tb.Skipf("private RabbitMQ node unavailable: %v", err)
	}
	var raw [4]byte
	if _, err := rand.Read(raw[:]); err != nil {
		tb.Fatal(err)
	}
	ports := anchordtest.FreePorts(tb, 2)
	dir := tb.TempDir()
	r := &RabbitMQ{
		tb:     tb,
		node:   "anchordtest-" + hex.EncodeToString(raw[:]) + "@localhost",
		port:   ports[0],
		dir:    dir,
		server: server,
		ctl:    ctl,
	}
	for _, sub := range []string{"home", "mnesia", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	files := map[string]string{
		// The system-wide rabbitmq.conf pins the shared node's port; ours replaces it.
		"rabbitmq.conf": fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\nloopback_users = none\n", r.port),
		// An empty env file keeps the system rabbitmq-env.conf (and its NODENAME) out.
		"rabbitmq-env.conf": "",
		// No plugins: nothing else listens, so no port can clash.
		"enabled_plugins": "[].\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	r.env = append(os.Environ(),
		"HOME="+filepath.Join(dir, "home"), // the Erlang cookie shared by server and rabbitmqctl
		"RABBITMQ_NODENAME="+r.node,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(r.port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(ports[1]),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_PID_FILE="+r.pidFile(),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(dir, "advanced.config"),
		"RABBITMQ_CONF_ENV_FILE="+filepath.Join(dir, "rabbitmq-env.conf"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_FLAGS=-kernel inet_dist_use_interface {127,0,0,1}",
	)
	tb.Cleanup(r.stop)
	r.boot()
	return r
}

// boot starts the node and waits until the application runs.
func (r *RabbitMQ) boot() {
	r.tb.Helper()
	start := time.Now()
	r.run(r.server, "-detached")
	r.ctlRun("wait", "--timeout", "150", r.pidFile())
	r.mu.Lock()
	r.appStopped = false
	r.mu.Unlock()
	r.tb.Logf("servicetest: RabbitMQ node %s on 127.0.0.1:%d started in %s", r.node, r.port, time.Since(start).Round(time.Millisecond))
}

// Start boots a node that Kill ended, on the same data directory, as after a crash.
func (r *RabbitMQ) Start() {
	r.tb.Helper()
	r.mu.Lock()
	killed := r.killed
	r.killed = false
	r.mu.Unlock()
	if !killed {
		r.tb.Fatal("servicetest: Start is for a node that Kill ended")
	}
	_ = os.Remove(r.pidFile())
	r.boot()
}

// URL is the node's AMQP URL (guest/guest).
func (r *RabbitMQ) URL() string {
	return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", r.port)
}

// Node is the Erlang node name, for rabbitmqctl -n.
func (r *RabbitMQ) Node() string { return r.node }

// StopApp stops the RabbitMQ application (rabbitmqctl stop_app): clients are disconnected and
// the port closes, the Erlang node keeps running. Durable queues and persistent messages
// survive.
func (r *RabbitMQ) StopApp() {
	r.tb.Helper()
	r.mu.Lock()
	r.appStopped = true
	r.mu.Unlock()
	r.ctlRun("stop_app")
}

// StartApp starts the application again and returns once it accepts connections.
func (r *RabbitMQ) StartApp() {
	r.tb.Helper()
	r.ctlRun("start_app")
	r.ctlRun("await_startup", "--timeout", "150")
	r.mu.Lock()
	r.appStopped = false
	r.mu.Unlock()
}

// RaiseMemoryAlarm sets the node's memory high watermark below what it uses, which raises its
// memory alarm: RabbitMQ then stops reading every connection that publishes, and tells those
// clients that asked for it that it blocks them (connection.blocked).
func (r *RabbitMQ) RaiseMemoryAlarm() {
	r.tb.Helper()
	r.mu.Lock()
	r.alarm = true
	r.mu.Unlock()
	r.ctlRun("set_vm_memory_high_watermark", "absolute", "1000000")
}

// ClearMemoryAlarm sets the watermark back to RabbitMQ's default share of the machine's memory.
func (r *RabbitMQ) ClearMemoryAlarm() {
	r.tb.Helper()
	r.ctlRun("set_vm_memory_high_watermark", "0.4")
	r.mu.Lock()
	r.alarm = false
	r.mu.Unlock()
}

// Restore starts the application or the node again if a test stopped or killed it and failed
// before starting it, so that the tests sharing the node after it find it running. Call it from
// the goroutine of the test that started the node (a failure here fails that test).
func (r *RabbitMQ) Restore() {
	r.tb.Helper()
	r.mu.Lock()
	killed, stopped, alarm := r.killed, r.appStopped, r.alarm
	r.mu.Unlock()
	switch {
	case killed:
		r.tb.Logf("servicetest: RabbitMQ node %s left killed; starting it again", r.node)
		r.Start()
	case stopped:
		r.tb.Logf("servicetest: RabbitMQ node %s left with its app stopped; starting it again", r.node)
		r.StartApp()
	}
	if alarm {
		r.tb.Logf("servicetest: RabbitMQ node %s left with its memory alarm raised; clearing it", r.node)
		r.ClearMemoryAlarm()
	}
}

// Kill ends the node with SIGKILL, as a crash would, and waits until the process is gone.
func (r *RabbitMQ) Kill() {
	r.tb.Helper()
	pid := r.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		r.tb.Fatalf("servicetest: kill RabbitMQ pid %d: %v", pid, err)
	}
	r.mu.Lock()
	r.killed = true
	r.mu.Unlock()
	deadline := time.Now().Add(rabbitCommandTimeout)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			r.tb.Fatalf("servicetest: RabbitMQ pid %d still alive after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond) // no signal for another process's exit
	}
}

// stop halts the node at the end of the test, before its directory is removed.
func (r *RabbitMQ) stop() {
	r.mu.Lock()
	killed := r.killed
	r.mu.Unlock()
	if killed {
		return
	}
	if _, err := r.exec(r.ctl, "-n", r.node, "stop", r.pidFile()); err != nil {
		r.tb.Logf("servicetest: stop RabbitMQ node %s: %v; killing it", r.node, err)
		if pid, perr := r.readPid(); perr == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (r *RabbitMQ) pidFile() string { return filepath.Join(r.dir, "rabbitmq.pid") }

func (r *RabbitMQ) pid() int {
	r.tb.Helper()
	pid, err := r.readPid()
	if err != nil {
		r.tb.Fatalf("servicetest: %v", err)
	}
	return pid
}

func (r *RabbitMQ) readPid() (int, error) {
	raw, err := os.ReadFile(r.pidFile())
	if err != nil {
		return 0, fmt.Errorf("read RabbitMQ pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("parse RabbitMQ pid file: %w", err)
	}
	return pid, nil
}

func (r *RabbitMQ) ctlRun(args ...string) {
	r.tb.Helper()
	r.run(r.ctl, append([]string{"-n", r.node}, args...)...)
}

func (r *RabbitMQ) run(bin string, args ...string) {
	r.tb.Helper()
	if out, err := r.exec(bin, args...); err != nil {
		r.tb.Fatalf("servicetest: %s %s: %v\n%s\n(logs in %s)", filepath.Base(bin), strings.Join(args, " "), err, out,
			filepath.Join(r.dir, "log"))
	}
}

func (r *RabbitMQ) exec(bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rabbitCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = r.env
	cmd.Dir = r.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// rabbitBinaries finds the rabbitmq-server and rabbitmqctl scripts themselves. Debian's
// /usr/sbin entries are a wrapper that switches to the rabbitmq user (and its cookie and file
// permissions); the scripts it calls live next to the wrapper's target.
func rabbitBinaries() (server, ctl string, err error) {
	path, err := exec.LookPath("rabbitmq-server")
	if err != nil {
		return "", "", fmt.Errorf("rabbitmq-server not installed: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", "", fmt.Errorf("resolve %s: %w", path, err)
	}
	for _, dir := range []string{filepath.Dir(resolved), filepath.Dir(path)} {
		s, c := filepath.Join(dir, "rabbitmq-server"), filepath.Join(dir, "rabbitmqctl")
		if isFile(s) && isFile(c) {
			return s, c, nil
		}
	}
	return "", "", errors.New("rabbitmqctl not found next to rabbitmq-server")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
