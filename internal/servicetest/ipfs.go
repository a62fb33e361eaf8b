package servicetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anchord/anchord/internal/anchordtest"
)

// ipfsStartTimeout bounds `ipfs init` and the wait until a started daemon answers.
const ipfsStartTimeout = 60 * time.Second

// ipfsStopTimeout is how long Stop lets the daemon shut down before it kills it.
const ipfsStopTimeout = 30 * time.Second

// IPFS is a private Kubo node: its own repository, offline (no swarm, no bootstrap peers, no
// routing), its RPC API and gateway on loopback ports that stay the same across Stop, Start, Kill
// and Wipe, so a client made once keeps working after a restart.
type IPFS struct {
	tb      testing.TB
	bin     string
	dir     string // holds repo/ and daemon.log
	apiPort int
	gwPort  int

	mu      sync.Mutex
	running *ipfsProcess // nil while stopped
}

// ipfsProcess is one run of `ipfs daemon`; done is closed by the goroutine that waits for it.
type ipfsProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartIPFS initialises an empty repository and starts a private node on it; the node is killed
// and its files removed when the test ends. The binary comes from ANCHORD_TEST_IPFS_BIN: without
// it the test is skipped, or fails when ANCHORD_TEST_REQUIRE_SERVICES is set.
func StartIPFS(tb testing.TB) *IPFS {
	tb.Helper()
	bin := anchordtest.IPFSBin(tb)
	n := &IPFS{tb: tb, bin: bin, dir: tb.TempDir()}
	tb.Cleanup(n.cleanup)
	// The ports were free when chosen, but another test may take one before the daemon binds
	// it; only the first start can move to other ports, later ones must keep the URLs.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		ports := anchordtest.FreePorts(tb, 2)
		n.apiPort, n.gwPort = ports[0], ports[1]
		if err = os.RemoveAll(n.repo()); err != nil {
			break
		}
		n.initRepo()
		if err = n.start(); err == nil {
			return n
		}
	}
	tb.Fatalf("servicetest: start IPFS daemon: %v\ndaemon log:\n%s", err, n.daemonLog())
	return nil
}

// URL is the base URL of the node's RPC API (ipfs.Config.URL, Orb's --ipfs-url).
func (n *IPFS) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.apiPort) }

// GatewayURL is the base URL of the node's HTTP gateway (GET /ipfs/<cid>).
func (n *IPFS) GatewayURL() string { return fmt.Sprintf("http://127.0.0.1:%d", n.gwPort) }

// Start starts the daemon on the node's repository and returns once the RPC API answers. The
// node must not be running.
func (n *IPFS) Start() {
	n.tb.Helper()
	if err := n.start(); err != nil {
		n.tb.Fatalf("servicetest: start IPFS daemon: %v\ndaemon log:\n%s", err, n.daemonLog())
	}
}

func (n *IPFS) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running != nil {
		return errors.New("already running")
	}
	start := time.Now()
	logFile, err := os.OpenFile(filepath.Join(n.dir, "daemon.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("daemon log: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	// --offline: no swarm listener and no network beyond the loopback API; the repository's
	// config (written by initRepo) also leaves bootstrap, discovery and routing empty.
	cmd := exec.Command(n.bin, "daemon", "--offline")
	cmd.Env = n.env()
	cmd.Dir = n.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", n.bin, err)
	}
	p := &ipfsProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	n.running = p
	if err := n.waitReady(p); err != nil {
		n.killLocked()
		return err
	}
	n.tb.Logf("servicetest: IPFS node on %s started in %s", n.URL(), time.Since(start).Round(time.Millisecond))
	return nil
}

// Stop shuts the daemon down the way an operator would (SIGTERM) and waits until it has exited;
// content and pins survive. After ipfsStopTimeout it is killed instead.
func (n *IPFS) Stop() {
	n.tb.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.running
	if p == nil {
		n.tb.Fatal("servicetest: IPFS node is not running")
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		n.running = nil
	case <-time.After(ipfsStopTimeout):
		n.killLocked()
		n.tb.Fatalf("servicetest: IPFS daemon ignored SIGTERM for %s; killed\ndaemon log:\n%s", ipfsStopTimeout, n.daemonLog())
	}
}

// Kill ends the daemon with SIGKILL, as a crash would, and waits until it is gone. Start runs it
// again on the same repository.
func (n *IPFS) Kill() {
	n.tb.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running == nil {
		n.tb.Fatal("servicetest: IPFS node is not running")
	}
	n.killLocked()
}

// Wipe replaces the repository with an empty one (a node that lost its disk): every file and pin
// is gone, the ports stay. A running node is stopped first and started again afterwards.
func (n *IPFS) Wipe() {
	n.tb.Helper()
	n.mu.Lock()
	wasRunning := n.running != nil
	n.mu.Unlock()
	if wasRunning {
		n.Stop()
	}
	if err := os.RemoveAll(n.repo()); err != nil {
		n.tb.Fatalf("servicetest: wipe IPFS repository: %v", err)
	}
	n.initRepo()
	if wasRunning {
		n.Start()
	}
}

// initRepo creates an empty repository (--empty-repo: not even the help files) with the test
// profile, then fixes the API and gateway ports and turns the swarm off.
func (n *IPFS) initRepo() {
	n.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ipfsStartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, "init", "--profile", "test", "--empty-repo")
	cmd.Env = n.env()
	cmd.Dir = n.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		n.tb.Fatalf("servicetest: ipfs init: %v\n%s", err, out)
	}
	path := filepath.Join(n.repo(), "config")
	b, err := os.ReadFile(path)
	if err != nil {
		n.tb.Fatalf("servicetest: read IPFS config: %v", err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		n.tb.Fatalf("servicetest: parse IPFS config: %v", err)
	}
	addrs, ok := cfg["Addresses"].(map[string]any)
	if !ok {
		n.tb.Fatalf("servicetest: IPFS config has no Addresses object")
	}
	// The test profile puts API and gateway on port 0, which would change at every start.
	addrs["API"] = fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", n.apiPort)
	addrs["Gateway"] = fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", n.gwPort)
	addrs["Swarm"] = []string{}
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		n.tb.Fatalf("servicetest: encode IPFS config: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		n.tb.Fatalf("servicetest: write IPFS config: %v", err)
	}
}

// waitReady polls the version endpoint until it answers 200, the daemon exits, or the start
// timeout passes. Kubo offers no readiness signal to a parent but its log line, and the API
// answering is what a test needs anyway.
func (n *IPFS) waitReady(p *ipfsProcess) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(ipfsStartTimeout)
	for {
		req, err := http.NewRequest(http.MethodPost, n.URL()+"/api/v0/version", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before its API answered: %v", p.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("API on %s did not answer within %s", n.URL(), ipfsStartTimeout)
		}
	}
}

func (n *IPFS) killLocked() {
	p := n.running
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	n.running = nil
}

// cleanup kills a node still running when the test ends, before TempDir removes its files.
func (n *IPFS) cleanup() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.killLocked()
	if n.tb.Failed() {
		n.tb.Logf("IPFS daemon log:\n%s", n.daemonLog())
	}
}

func (n *IPFS) repo() string { return filepath.Join(n.dir, "repo") }

func (n *IPFS) env() []string {
	return append(os.Environ(),
		"IPFS_PATH="+n.repo(),
		// Kubo reports anonymous usage to its developers unless told not to; a test node
		// talks to nobody.
		"IPFS_TELEMETRY=off",
		"GOLOG_LOG_LEVEL=error",
	)
}

// daemonLog returns the end of the daemon's log, for failure messages.
func (n *IPFS) daemonLog() string {
	b, err := os.ReadFile(filepath.Join(n.dir, "daemon.log"))
	if err != nil {
		return err.Error()
	}
	s := string(b)
	if len(s) > 8<<10 {
		s = "…" + s[len(s)-8<<10:]
	}
	return strings.TrimSpace(s)
}
