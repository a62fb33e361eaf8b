package anchordtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/admintoken"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// RaceChildrenEnv names the variable that builds the processes the tests start with the race
// detector ("1"). Without it they are built without: with the instrumented binaries
// cmd/anchord's tests took nearly twice as long on two cores (702 s against 363 s), while each
// component's concurrent code is raced in-process by its package's tests (and the embedded
// daemon as a whole by loadgen's). With it, a race a child reports fails the test that started
// it; before it existed, children were built with -race and their reports went unread.
const RaceChildrenEnv = "ANCHORD_TEST_RACE_CHILDREN"

// raceChildren reports whether the processes the tests start are built with -race.
func raceChildren() bool { return os.Getenv(RaceChildrenEnv) == "1" }

// raceReport is the line the race detector writes for each race it finds; a child keeps running
// after it, so the report is found only in its log.
const raceReport = "WARNING: DATA RACE"

// Binary builds cmd/anchord once per test process (with -race only under RaceChildrenEnv, and
// with the revision in ANCHORD_REVISION stamped in, as scripts/test sets it) and returns its
// path. The build directory is removed by the OS temp cleaner, not by the test, because several
// tests share it.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "anchordtest-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "anchord")
		args := []string{"build", "-o", buildPath}
		if raceChildren() {
			args = append(args, "-race")
		}
		if rev := os.Getenv("ANCHORD_REVISION"); rev != "" {
			args = append(args, "-ldflags", "-X main.revision="+rev)
		}
		args = append(args, "github.com/anchord/anchord/cmd/anchord")
		cmd := exec.Command("go", args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w: %s", err, out)
		}
	})
	require.NoError(tb, buildErr)
	return buildPath
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePorts(tb, 1)[0])
}

// The ports FreePorts hands out lie below Linux's ephemeral range (32768–60999 by default).
// A port the kernel picked for a listen on :0 is also one it may give the next outgoing
// connection once released, and a suite that runs many clients at once did take one between
// the pick and the child's bind (a development ledger that never started). No connect takes a
// port from this range, so only another test's pick could collide, and picks are random.
const (
	freePortLow  = 20000
	freePortHigh = 32767
)

// FreePorts returns n distinct loopback ports that were free a moment ago (all held open at
// once while they are picked, so they differ).
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports := make([]int, 0, n)
	for attempt := 0; len(ports) < n; attempt++ {
		require.Less(tb, attempt, 1000, "find %d free loopback ports in %d–%d", n, freePortLow, freePortHigh)
		port := freePortLow + rand.IntN(freePortHigh-freePortLow+1)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		defer l.Close()
		ports = append(ports, port)
	}
	return ports
}

// LoopbackPeers is the --peer-allowed-addresses StartProcess gives a `serve` that names none:
// all of loopback, where the domains of the tests live. (The admin listener stays refused.)
const LoopbackPeers = "127.0.0.0/8,::1/128"

// Process is a running anchord binary.
type Process struct {
	tb   testing.TB
	cmd  *exec.Cmd
	args []string
	Addr string
	log  *SyncBuffer
	done chan struct{}
	err  error
}

// ProcessConfig describes how to start the binary.
type ProcessConfig struct {
	Args []string // after the binary, e.g. {"serve", "--data-dir", dir}
	Env  []string // added to the test's environment
	Dir  string   // working directory; defaults to a temp dir
	Addr string   // the --host-url the process listens on; used by WaitHealthy
}

// StartProcess starts the binary. Its stderr (the log) is captured and printed if the test
// fails; the process is killed at the end of the test if it is still running.
func StartProcess(tb testing.TB, cfg ProcessConfig) *Process {
	tb.Helper()
	bin := Binary(tb)
	args := cfg.Args
	if len(args) > 0 && args[0] == "serve" && !slices.Contains(args, "--admin-addr") &&
		!slices.ContainsFunc(cfg.Env, func(e string) bool { return strings.HasPrefix(e, "ANCHORD_ADMIN_ADDR=") }) {
		// Several instances run at once: each gets its admin listener on a free port.
		args = append(slices.Clone(args), "--admin-addr", "127.0.0.1:0")
	}
	if len(args) > 0 && args[0] == "serve" && !slices.Contains(args, "--peer-allowed-addresses") &&
		!slices.ContainsFunc(cfg.Env, func(e string) bool { return strings.HasPrefix(e, "ANCHORD_PEER_ALLOWED_ADDRESSES=") }) {
		// The domains of a test all live on loopback, where the outbound guard refuses to go
		// unless told. Tests of the guard itself name their allowances explicitly.
		args = append(slices.Clone(args), "--peer-allowed-addresses", LoopbackPeers)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = cfg.Dir
	if cmd.Dir == "" {
		cmd.Dir = tb.TempDir()
	}
	cmd.Env = append(os.Environ(), cfg.Env...)
	log := &SyncBuffer{}
	cmd.Stderr = log
	cmd.Stdout = log
	require.NoError(tb, cmd.Start())
	p := &Process{tb: tb, cmd: cmd, args: args, Addr: cfg.Addr, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if raceChildren() && strings.Contains(log.String(), raceReport) {
			tb.Errorf("%s reported a data race", strings.Join(cfg.Args, " "))
		}
		if tb.Failed() {
			tb.Logf("log of %s:\n%s", strings.Join(cfg.Args, " "), log.String())
		}
	})
	return p
}

// adminLine is the start-up line that names the admin listener's address, in text or JSON.
var adminLine = regexp.MustCompile(`msg="admin listener" addr=(\S+)|"msg":"admin listener","addr":"([^"]+)"`)

// AdminAddr returns the address of the process's admin listener, from its log; it waits up to
// 30 s for the line.
func (p *Process) AdminAddr() string {
	p.tb.Helper()
	var addr string
	Eventually(p.tb, 30*time.Second, 20*time.Millisecond, func() bool {
		if m := adminLine.FindStringSubmatch(p.Log()); m != nil {
			addr = m[1] + m[2]
		}
		return addr != ""
	}, "the process logs its admin listener")
	return addr
}

// AdminToken returns the token of the process's admin listener: its --admin-token, or the one
// it keeps in its data directory (--data-dir, relative to its working directory, or ./data).
// Like AdminAddr, it waits for the admin listener, which serves only once the token exists.
func (p *Process) AdminToken() string {
	p.tb.Helper()
	if v, ok := argValue(p.args, "--admin-token"); ok {
		return v
	}
	p.AdminAddr()
	dir, ok := argValue(p.args, "--data-dir")
	if !ok {
		dir = "data"
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(p.cmd.Dir, dir)
	}
	token, err := admintoken.Read(dir)
	require.NoError(p.tb, err, "the admin token the process keeps")
	return token
}

// argValue returns the value of a parameter in args, given as "--name value" or "--name=value".
func argValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// Log returns everything the process wrote so far.
func (p *Process) Log() string { return p.log.String() }

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) {
	p.tb.Helper()
	require.NoError(p.tb, p.cmd.Process.Signal(sig))
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	p.tb.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Wait waits up to timeout for the process to exit and returns its exit code.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
	case <-time.After(timeout):
		return -1, fmt.Errorf("process still running after %s", timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), nil
	}
	if p.err != nil {
		return -1, p.err
	}
	return 0, nil
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Health returns the status code of GET /healthcheck, or 0 when the server does not answer.
func (p *Process) Health() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr+"/healthcheck", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// WaitHealthy waits until /healthcheck answers 200 and returns how long that took.
func (p *Process) WaitHealthy(timeout time.Duration) time.Duration {
	p.tb.Helper()
	start := time.Now()
	Eventually(p.tb, timeout, 20*time.Millisecond, func() bool {
		if p.Exited() {
			p.tb.Fatalf("process exited before becoming healthy:\n%s", p.Log())
		}
		return p.Health() == http.StatusOK
	}, "process at %s not healthy", p.Addr)
	return time.Since(start)
}
