package main

import (
	"bufio"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/amqppubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store/storetest"
)

// clusterNode is one anchord process of a test cluster; restart replaces a killed one.
type clusterNode struct {
	t    *testing.T
	addr string
	args []string
	env  []string
	mu   sync.Mutex
	proc *anchordtest.Process
}

func (n *clusterNode) start() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.proc = anchordtest.StartProcess(n.t, anchordtest.ProcessConfig{Args: n.args, Env: n.env, Addr: n.addr})
	n.proc.WaitHealthy(60 * time.Second)
}

func (n *clusterNode) process() *anchordtest.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// testCluster is n instances sharing a fresh PostgreSQL schema and a fresh RabbitMQ prefix.
type testCluster struct {
	nodes  []*clusterNode
	dbURL  string
	prefix string
}

// fastTiming makes the cluster tests' take-overs quick; TestClusterRecoversAKilledInstance runs
// on the defaults instead.
var fastTiming = []string{"--op-queue-task-monitor-interval", "1s", "--op-queue-task-expiration", "5s", "--task-manager-check-interval", "1s"}

func startCluster(t *testing.T, n int, extra ...string) *testCluster {
	t.Helper()
	return newCluster(t, make([][]string, n), append(slices.Clone(fastTiming), extra...)...)
}

// newCluster starts one instance per entry of env (with those environment variables), each with
// the common arguments and args.
func newCluster(t *testing.T, env [][]string, args ...string) *testCluster {
	t.Helper()
	amqpURL := anchordtest.AMQPURL(t)
	c := &testCluster{dbURL: storetest.PostgresURL(t), prefix: randomPrefix(t)}
	// Registered before the processes, so it runs after they are gone. The wait queues are
	// named by the retry schedule, so each schedule the instances ran with is removed.
	t.Cleanup(func() {
		for _, rd := range c.redeliveries(t) {
			if err := amqppubsub.RemoveTopology(amqppubsub.Config{URL: amqpURL, Prefix: c.prefix, Redelivery: rd}); err != nil {
				t.Logf("remove RabbitMQ topology %s: %v", c.prefix, err)
			}
		}
	})
	for _, e := range env {
		addr := anchordtest.FreeAddr(t)
		node := &clusterNode{t: t, addr: addr, env: e, args: append([]string{
			"serve", "--host-url", addr, "--database-url", c.dbURL, "--mq-url", amqpURL, "--mq-prefix", c.prefix,
			"--batch-writer-timeout", "300ms",
		}, args...)}
		node.start()
		c.nodes = append(c.nodes, node)
	}
	return c
}

// redeliveries returns the distinct retry schedules the cluster's instances were configured
// with, from their arguments and environment (the test's, with the node's added, as
// anchordtest.StartProcess gives it) as serve reads them.
func (c *testCluster) redeliveries(t *testing.T) []pubsub.RedeliveryConfig {
	var out []pubsub.RedeliveryConfig
	for _, n := range c.nodes {
		cfg, err := config.Load(n.args[1:], func(name string) (string, bool) {
			for _, kv := range slices.Backward(n.env) {
				if k, v, ok := strings.Cut(kv, "="); ok && k == name {
					return v, true
				}
			}
			return os.LookupEnv(name)
		}, io.Discard)
		if err != nil {
			t.Logf("read instance %s's retry schedule: %v", n.addr, err)
			continue
		}
		if rd := cfg.Redelivery(); !slices.Contains(out, rd) {
			out = append(out, rd)
		}
	}
	if len(out) == 0 {
		out = append(out, pubsub.RedeliveryConfig{})
	}
	return out
}

func randomPrefix(t *testing.T) string {
	var b [5]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return "anchordtest-" + hex.EncodeToString(b[:])
}

func (c *testCluster) targets() string {
	var urls []string
	for _, n := range c.nodes {
		urls = append(urls, "http://"+n.addr)
	}
	return strings.Join(urls, ",")
}

// readAccepted parses loadgen's --accepted-out file.
func readAccepted(t *testing.T, path string) map[opKey]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[opKey]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		require.Len(t, parts, 3, sc.Text())
		reveal := parts[2]
		if reveal == "-" {
			reveal = ""
		}
		out[opKey{parts[0], parts[1], reveal}]++
	}
	require.NoError(t, sc.Err())
	return out
}

// TestClusterSurvivesKillsUnderLoad runs three instances under anchord loadgen while one
// instance after another is killed with SIGKILL and restarted, then counts: every operation the
// load generator saw accepted is in the anchored batch files exactly once, no operation is in
// them twice, and every accepted DID resolves on every instance.
//
// Under -race the load is scaled down to what the instrumented binaries sustain on two cores;
// ANCHORD_TEST_CLUSTER_FULL=1 runs the 2,000 operations/s for 2 minutes with a kill every
// 10 s (use it without -race); ANCHORD_TEST_CLUSTER_RATE then sets another rate.
func TestClusterSurvivesKillsUnderLoad(t *testing.T) {
	t.Parallel()
	rate, duration, every := "80", 24*time.Second, 4*time.Second
	if os.Getenv("ANCHORD_TEST_CLUSTER_FULL") == "1" {
		rate, duration, every = cmp.Or(os.Getenv("ANCHORD_TEST_CLUSTER_RATE"), "2000"), 2*time.Minute, 10*time.Second
	}
	c := startCluster(t, 3)
	accepted := filepath.Join(t.TempDir(), "accepted.txt")
	gen := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: []string{
		"loadgen", "--target", c.targets(), "--rate", rate, "--concurrency", "64", "--duration", duration.String(),
		"--sample-every", "50", "--resolve-timeout", "90s", "--accepted-out", accepted,
	}})

	// Kill one instance after another on a fixed period and bring it back at once.
	kills := 0
	stop := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			n := c.nodes[i%len(c.nodes)]
			n.process().Kill()
			kills++
			n.start()
		}
	}()
	code, err := gen.Wait(duration + 3*time.Minute)
	close(stop)
	<-killerDone
	require.NoError(t, err)
	require.Equal(t, 0, code, "loadgen:\n%s", gen.Log())
	t.Logf("loadgen with %d kills:\n%s", kills, lastLines(gen.Log(), 8))

	want := readAccepted(t, accepted)
	require.NotEmpty(t, want)
	api := newClient(c.nodes[0].addr)
	var counts map[opKey]int
	// Operations of a killed instance come back once the op-queue monitor has taken it over.
	anchordtest.Eventually(t, 3*time.Minute, 2*time.Second, func() bool {
		counts = map[opKey]int{}
		for _, op := range api.anchoredOperations(t, sidetree.DefaultProfile()) {
			counts[keyOf(t, op)]++
		}
		for k := range want {
			if counts[k] == 0 {
				return false
			}
		}
		return true
	}, "accepted operations never all anchored")

	for k, n := range counts {
		require.Equal(t, 1, n, "%v anchored %d times", k, n)
	}
	for k, n := range want {
		require.Equal(t, 1, n, "%v accepted %d times by loadgen", k, n)
		require.Equal(t, 1, counts[k], "accepted %v anchored %d times", k, counts[k])
	}
	t.Logf("%d accepted, %d anchored (the rest had no answer when an instance died), %d kills", len(want), len(counts), kills)

	// Every instance resolves every accepted DID (a sample of them in the full run).
	type resolution struct {
		suffix string
		api    *apiClient
	}
	var clients []*apiClient
	for _, n := range c.nodes {
		clients = append(clients, newClient(n.addr))
	}
	var resolutions []resolution
	for k := range want {
		if os.Getenv("ANCHORD_TEST_CLUSTER_FULL") == "1" && len(resolutions) >= 2000*len(clients) {
			break
		}
		for _, cl := range clients {
			resolutions = append(resolutions, resolution{k.suffix, cl})
		}
	}
	unresolved := eventuallyEach(resolutions, 8, 30*time.Second, 100*time.Millisecond, func(r resolution) bool {
		code, body, err := r.api.resolve("did:sidetree:" + r.suffix)
		return err == nil && code == http.StatusOK && strings.Contains(string(body), `"published":true`)
	})
	if len(unresolved) > 0 {
		t.Fatalf("%d of %d resolutions not published within 30 s, the first %s on %s",
			len(unresolved), len(resolutions), unresolved[0].suffix, unresolved[0].api.base)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestClusterFencesAPausedInstance stops an instance (SIGSTOP) while it holds operations in
// memory, past the op-queue task expiration: another instance takes it over and its operations
// are reposted and anchored; when the paused instance resumes (SIGCONT), its late Ack is fenced
// off and it stops, so none of its operations is anchored twice.
func TestClusterFencesAPausedInstance(t *testing.T) {
	t.Parallel()
	// The victim starts alone, so it consumes every operation, and waits long before cutting.
	c := startCluster(t, 1, "--batch-writer-timeout", "8s")
	victim := c.nodes[0]
	api := newClient(victim.addr)
	w := newCrashClient(t)
	w.setServer(victim.addr)
	for range 40 {
		require.True(t, w.create())
	}
	require.Len(t, w.accepted, 40)
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
		return api.metric(t, "anchord_opqueue_length") == 40
	}, "the victim never queued the operations")

	// Two more instances join; then the victim freezes with the 40 operations in memory.
	for range 2 {
		addr := anchordtest.FreeAddr(t)
		args := append([]string(nil), victim.args...)
		for i, a := range args {
			switch a {
			case victim.addr:
				args[i] = addr
			case "8s":
				args[i] = "300ms"
			}
		}
		n := &clusterNode{t: t, addr: addr, args: args}
		n.start()
		c.nodes = append(c.nodes, n)
	}
	victim.process().Signal(syscall.SIGSTOP)
	paused := time.Now()

	// Taken over after the 5 s expiration; reposted and anchored by the others.
	other := newClient(c.nodes[1].addr)
	for k := range w.accepted {
		anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			code, _, err := other.resolve("did:sidetree:" + k.suffix)
			return err == nil && code == http.StatusOK
		}, "operation of the paused instance never anchored elsewhere")
	}
	t.Logf("the paused instance's 40 operations were anchored by the others %s after SIGSTOP", time.Since(paused).Round(time.Millisecond))

	// Resume it past its batch timeout: it must not anchor them again, and it must stop.
	time.Sleep(time.Until(paused.Add(9 * time.Second)))
	victim.process().Signal(syscall.SIGCONT)
	code, err := victim.process().Wait(30 * time.Second)
	require.NoError(t, err, "the resumed instance must stop once it learns it was taken over")
	require.NotEqual(t, 0, code)
	require.Contains(t, victim.process().Log(), "taken over")

	counts := map[opKey]int{}
	for _, op := range other.anchoredOperations(t, sidetree.DefaultProfile()) {
		counts[keyOf(t, op)]++
	}
	for k := range w.accepted {
		require.Equal(t, 1, counts[k], "%v anchored %d times", k, counts[k])
	}
	require.Len(t, counts, 40)
}

// TestClusterTaskPermitTakeover kills the instance that holds the op-queue monitor's permit; an
// instance still alive takes the permit over under a higher term.
func TestClusterTaskPermitTakeover(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3)
	holderLog := func() (int, string) {
		for i, n := range c.nodes {
			p := n.process()
			if p.Exited() {
				continue
			}
			for _, line := range strings.Split(p.Log(), "\n") {
				if strings.Contains(line, `msg="permit gained"`) && strings.Contains(line, "task="+opQueueMonitorTaskName) {
					return i, line
				}
			}
		}
		return -1, ""
	}
	var holder int
	var first string
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		holder, first = holderLog()
		return holder >= 0
	}, "no instance took the op-queue monitor permit")
	c.nodes[holder].process().Kill()
	killed := time.Now()

	var line string
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		var i int
		i, line = holderLog()
		return i >= 0 && i != holder
	}, "nobody took the permit over")
	require.Contains(t, line, "takeover=true")
	require.Greater(t, termOf(t, line), termOf(t, first), "the term increases with the holder")
	t.Logf("permit taken over %s after the holder was killed: %s", time.Since(killed).Round(time.Millisecond), line)
}

const opQueueMonitorTaskName = "op-queue-monitor"

var termField = regexp.MustCompile(`\bterm=(\d+)`)

func termOf(t *testing.T, line string) int {
	t.Helper()
	m := termField.FindStringSubmatch(line)
	require.NotNil(t, m, line)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// TestClusterGracefulStopGivesOperationsBack stops an instance with SIGTERM while it holds
// operations it has not batched: it hands them back through the broker and deletes its task
// entry, so another instance anchors them long before the entry would have expired.
func TestClusterGracefulStopGivesOperationsBack(t *testing.T) {
	t.Parallel()
	// The leaving instance starts alone (it consumes everything) and batches only after 60 s.
	c := startCluster(t, 1, "--batch-writer-timeout", "60s", "--op-queue-task-expiration", "2m")
	leaving := c.nodes[0]
	w := newCrashClient(t)
	w.setServer(leaving.addr)
	for range 30 {
		require.True(t, w.create())
	}
	api := newClient(leaving.addr)
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
		return api.metric(t, "anchord_opqueue_length") == 30
	}, "condition")
	args := append([]string(nil), leaving.args...)
	addr := anchordtest.FreeAddr(t)
	for i, a := range args {
		switch a {
		case leaving.addr:
			args[i] = addr
		case "60s":
			args[i] = "300ms"
		}
	}
	staying := &clusterNode{t: t, addr: addr, args: args}
	staying.start()

	stopped := time.Now()
	leaving.process().Signal(syscall.SIGTERM)
	code, err := leaving.process().Wait(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 0, code)
	require.Contains(t, leaving.process().Log(), "gave back queued operations")
	other := newClient(staying.addr)
	for k := range w.accepted {
		anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
			code, _, err := other.resolve("did:sidetree:" + k.suffix)
			return err == nil && code == http.StatusOK
		}, "%s not anchored by the staying instance", k.suffix)
	}
	took := time.Since(stopped)
	require.Less(t, took, 2*time.Minute, "nothing waited for the task entry to expire")
	t.Logf("30 operations handed over and anchored %s after SIGTERM (task expiration 2m)", took.Round(time.Millisecond))
}

// TestClusterOnePendingOperationPerDID sends 50 different updates of one DID at once, half to
// each of two instances, while every observer is held before indexing (the gate of
// failpoint.ObserverBeforeIndex): exactly one is accepted, the others get
// queueing_multiple_operations_per_did_not_allowed whichever instance they reached, and they
// still do once the accepted one is anchored, for as long as it is not indexed. Once the gate
// opens and it is indexed, they are judged on the state that holds it (commitment_mismatch: they
// reveal the key it used), only it is anchored, and the DID takes the next update.
//
// The gate makes the answers independent of timing: without it, an update that a loaded
// machine handles after the winner was indexed is rightly refused with commitment_mismatch, and
// the test could not tell that from a reservation that ended too early.
func TestClusterOnePendingOperationPerDID(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "observers-held")
	held := []string{"ANCHORD_FAILPOINTS=" + failpoint.ObserverBeforeIndex + "=" + gate}
	c := newCluster(t, [][]string{held, held}, fastTiming...)
	w := wallet.New(wallet.Config{})
	id, create, err := w.Create()
	require.NoError(t, err)
	api := []*apiClient{newClient(c.nodes[0].addr), newClient(c.nodes[1].addr)}
	code, body, err := api[0].post(create)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	published := func(cl *apiClient, want string) func() bool {
		return func() bool {
			code, body, err := cl.resolve(id.DID())
			return err == nil && code == http.StatusOK && strings.Contains(string(body), want)
		}
	}
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, published(api[1], `"published":true`), "the create is published")

	require.NoError(t, os.WriteFile(gate, nil, 0o600)) // from now on no anchor is indexed
	const n = 50
	updates := make([][]byte, n)
	after := make([]*wallet.Identity, n) // the identity as each update would leave it
	for i := range updates {
		cp := *id // every update reveals the same current key and commits to a different next one
		updates[i], err = w.Update(&cp)
		require.NoError(t, err)
		after[i] = &cp
	}
	codes := make([]int, n)
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := range updates {
		wg.Go(func() {
			code, body, err := api[i%2].post(updates[i])
			if err != nil {
				t.Errorf("update %d: %v", i, err)
			}
			codes[i], bodies[i] = code, string(body)
		})
	}
	wg.Wait()
	winner := -1
	for i, code := range codes {
		if code == http.StatusOK {
			require.Equal(t, -1, winner, "a second update was accepted: %d and %d; answers %v", winner, i, codes)
			winner = i
			continue
		}
		require.Equal(t, http.StatusBadRequest, code, "update %d: %s", i, bodies[i])
		require.Contains(t, bodies[i], "queueing_multiple_operations_per_did_not_allowed")
	}
	require.NotEqual(t, -1, winner, "one update is accepted")

	// Only the winner is anchored; anchored but not indexed, it still holds the DID on both
	// instances.
	updatesAnchored := func() [][]byte {
		var out [][]byte
		for _, op := range api[0].anchoredOperations(t, sidetree.DefaultProfile()) {
			if op.Suffix == id.Suffix && op.Type == sidetree.OperationUpdate {
				out = append(out, op.Request)
			}
		}
		return out
	}
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool { return len(updatesAnchored()) == 1 }, "the accepted update is anchored")
	require.Equal(t, [][]byte{updates[winner]}, updatesAnchored(), "the anchored update is the accepted one")
	loser := (winner + 1) % n
	for _, cl := range api {
		code, body, err := cl.post(updates[loser])
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code, string(body))
		require.Contains(t, string(body), "queueing_multiple_operations_per_did_not_allowed", "the DID is free before its update is indexed")
	}

	require.NoError(t, os.Remove(gate))
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		code, body, err := api[loser%2].post(updates[loser])
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code, string(body))
		return strings.Contains(string(body), "commitment_mismatch")
	}, "once the winner is indexed, a losing update is judged on the state that holds it")
	for i := range updates {
		if i == winner {
			continue
		}
		code, body, err := api[i%2].post(updates[i])
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code, "update %d: %s", i, body)
		require.Contains(t, string(body), "commitment_mismatch", "update %d", i)
	}
	next, err := w.Update(after[winner])
	require.NoError(t, err)
	code, body, err = api[1-winner%2].post(next)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "the next update is accepted once the first is indexed: %s", body)
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool { return len(updatesAnchored()) == 2 }, "the next update is anchored")
	require.Equal(t, [][]byte{updates[winner], next}, updatesAnchored(), "no refused update was anchored")
}

// TestClusterRecoversAKilledInstance measures, with the default timing, the time from the
// SIGKILL of an instance to the moment the last of the operations it held is anchored by the
// others, and requires every one anchored once. The victim cannot anchor (its batches fail), so
// it holds every operation its consumer took. The time (the claims' expiry and the queue's
// monitor) is a figure, printed, not asserted: at load average 25 it was 35 s against the 30 s
// this test once required; the minute's wait below is the hang guard.
func TestClusterRecoversAKilledInstance(t *testing.T) {
	t.Parallel()
	c := newCluster(t, [][]string{{"ANCHORD_FAILPOINTS=batch-fail=1000000"}, nil, nil})
	victim := c.nodes[0]
	w := wallet.New(wallet.Config{})
	var accepted []string
	for i := range 300 {
		id, req, err := w.Create()
		require.NoError(t, err)
		code, body, err := newClient(c.nodes[1+i%2].addr).post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		accepted = append(accepted, id.Suffix)
	}
	api := newClient(c.nodes[1].addr)
	held := 0.0
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		held = newClient(victim.addr).metricTotal(t, "anchord_opqueue_length")
		return held > 0 && len(api.anchoredOperations(t, sidetree.DefaultProfile()))+int(held) == len(accepted)
	}, "the victim holds its share and the others anchored theirs")

	victim.process().Kill()
	killed := time.Now()
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return len(api.anchoredOperations(t, sidetree.DefaultProfile())) == len(accepted)
	}, "every operation of the killed instance is anchored by the others")
	took := time.Since(killed)
	t.Logf("SIGKILL of an instance holding %.0f operations to the last of them anchored elsewhere: %s", held, took.Round(100*time.Millisecond))
	counts := map[string]int{}
	for _, op := range api.anchoredOperations(t, sidetree.DefaultProfile()) {
		counts[op.Suffix]++
	}
	for _, s := range accepted {
		require.Equal(t, 1, counts[s], "%s anchored once", s)
	}
}

// A create posted many times at once to both instances is anchored once, and once indexed the
// same create is refused by either instance: the cluster's grouped state read of creates
// (observer/presence.go) and its carried parses answer as the uncached path did. The copies are
// posted while the observers are held before indexing, so that none is refused as an existing
// DID however late a loaded machine serves it.
func TestClusterDuplicateCreatesAnchorOnce(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "observers-held")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	held := []string{"ANCHORD_FAILPOINTS=" + failpoint.ObserverBeforeIndex + "=" + gate}
	c := newCluster(t, [][]string{held, held}, fastTiming...)
	w := wallet.New(wallet.Config{})
	api := []*apiClient{newClient(c.nodes[0].addr), newClient(c.nodes[1].addr)}
	const dids, copies = 4, 8
	ids := make([]*wallet.Identity, dids)
	creates := make([][]byte, dids)
	for i := range ids {
		var err error
		ids[i], creates[i], err = w.Create()
		require.NoError(t, err)
	}
	accepted := make([]atomic.Int32, dids)
	var wg sync.WaitGroup
	for i := range dids * copies {
		wg.Go(func() {
			code, body, err := api[i%2].post(creates[i%dids])
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			switch code {
			case http.StatusOK:
				accepted[i%dids].Add(1)
			case http.StatusBadRequest:
				if !strings.Contains(string(body), "queueing_multiple_operations_per_did_not_allowed") {
					t.Errorf("create %d: %s", i, body)
				}
			default:
				t.Errorf("create %d: %d %s", i, code, body)
			}
		})
	}
	wg.Wait()
	for i := range accepted {
		require.GreaterOrEqual(t, accepted[i].Load(), int32(1), "DID %d", i)
	}
	require.NoError(t, os.Remove(gate))
	for _, id := range ids {
		anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
			code, body, err := api[0].resolve(id.DID())
			return err == nil && code == http.StatusOK && strings.Contains(string(body), `"published":true`)
		}, "the create is published")
	}
	for i, create := range creates {
		for _, cl := range api {
			code, body, err := cl.post(create)
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, code, "DID %d: %s", i, body)
			require.Contains(t, string(body), string(sidetree.CodeDIDAlreadyExists))
		}
	}
	anchored := make(map[string]int)
	for _, op := range api[0].anchoredOperations(t, sidetree.DefaultProfile()) {
		anchored[op.Suffix]++
	}
	for i, id := range ids {
		require.Equal(t, 1, anchored[id.Suffix], "DID %d anchored once", i)
	}
}
