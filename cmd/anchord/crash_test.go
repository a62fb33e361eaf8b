package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// opKey identifies an operation across the client and the anchored files: its type, its DID and
// the reveal value it opens ("" for a create).
type opKey struct {
	typ, suffix, reveal string
}

// crashDID is one DID the crash client drives.
type crashDID struct {
	id          *wallet.Identity
	busy        bool
	published   bool
	deactivated bool
	// uncertain: an operation got no answer (the server died); its outcome is unknown, so the
	// client's keys may be stale and the DID is driven no further.
	uncertain bool
}

// crashClient sends a stream of valid mixed operations, follows each until it is resolvable,
// and records which were accepted and which had no answer.
type crashClient struct {
	t      *testing.T
	wallet *wallet.Wallet

	mu       sync.Mutex
	client   *apiClient
	dids     []*crashDID
	accepted map[opKey]int
	unknown  map[opKey]bool
	sent     int
	rejected []string
}

func newCrashClient(t *testing.T) *crashClient {
	return &crashClient{t: t, wallet: wallet.New(wallet.Config{}), accepted: map[opKey]int{}, unknown: map[opKey]bool{}}
}

func (c *crashClient) setServer(addr string) {
	c.mu.Lock()
	c.client = newClient(addr)
	c.mu.Unlock()
}

func (c *crashClient) api() *apiClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// pick reserves an idle published DID, or returns nil.
func (c *crashClient) pick() *crashDID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var idle []*crashDID
	for _, d := range c.dids {
		if d.published && !d.busy && !d.deactivated && !d.uncertain {
			idle = append(idle, d)
		}
	}
	if len(idle) == 0 {
		return nil
	}
	d := idle[rand.IntN(len(idle))]
	d.busy = true
	return d
}

// step sends one operation. It returns false when the server did not answer.
func (c *crashClient) step() bool {
	d := c.pick()
	if d == nil || rand.IntN(10) < 4 {
		if d != nil {
			c.mu.Lock()
			d.busy = false
			c.mu.Unlock()
		}
		return c.create()
	}
	next := *d.id
	var req []byte
	var err error
	var key opKey
	switch r := rand.IntN(10); {
	case r < 7:
		key = opKey{"update", d.id.Suffix, d.id.UpdateKey.RevealValue()}
		req, err = c.wallet.Update(&next, wallet.AddServices(wallet.Service{ID: "svc", Type: "LinkedDomains", Endpoint: fmt.Sprintf("https://example.com/%d", rand.Int())}))
	case r < 9:
		key = opKey{"recover", d.id.Suffix, d.id.RecoveryKey.RevealValue()}
		req, err = c.wallet.Recover(&next)
	default:
		key = opKey{"deactivate", d.id.Suffix, d.id.RecoveryKey.RevealValue()}
		req, err = c.wallet.Deactivate(&next)
	}
	if err != nil {
		c.t.Errorf("build %s: %v", key.typ, err) // not require: this runs in a worker goroutine
		return false
	}
	code, body, err := c.api().post(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent++
	switch {
	case err != nil || code == http.StatusServiceUnavailable:
		c.unknown[key] = err != nil // a 503 is a definite "not accepted"
		d.uncertain = err != nil
		d.busy = false
		return err == nil
	case code != http.StatusOK:
		c.rejected = append(c.rejected, fmt.Sprintf("%s %s: %d %s", key.typ, key.suffix, code, body))
		d.busy = false
		return true
	}
	c.accepted[key]++
	*d.id = next
	if key.typ == "deactivate" {
		d.deactivated = true
	}
	d.published = false // until the operation is resolvable
	d.busy = false
	return true
}

func (c *crashClient) create() bool {
	id, req, err := c.wallet.Create()
	if err != nil {
		c.t.Errorf("build create: %v", err)
		return false
	}
	key := opKey{"create", id.Suffix, ""}
	code, body, err := c.api().post(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent++
	switch {
	case err != nil:
		c.unknown[key] = true
		c.dids = append(c.dids, &crashDID{id: id, uncertain: true})
		return false
	case code == http.StatusServiceUnavailable:
		return true
	case code != http.StatusOK:
		c.rejected = append(c.rejected, fmt.Sprintf("create %s: %d %s", id.Suffix, code, body))
		return true
	}
	c.accepted[key]++
	c.dids = append(c.dids, &crashDID{id: id})
	return true
}

// refreshBatch bounds the DIDs one refresh resolves, oldest first.
const refreshBatch = 64

// refresh resolves DIDs whose last operation is not yet known to be resolvable and marks those
// whose state now shows it.
func (c *crashClient) refresh() {
	c.mu.Lock()
	var todo []*crashDID
	for _, d := range c.dids {
		if !d.published && !d.uncertain && len(todo) < refreshBatch {
			todo = append(todo, d)
		}
	}
	api := c.client
	c.mu.Unlock()
	for _, d := range todo {
		c.mu.Lock()
		want, deactivated := d.id.UpdateKey.Commitment(), d.deactivated
		c.mu.Unlock()
		code, body, err := api.resolve("did:sidetree:" + d.id.Suffix)
		if err != nil {
			return
		}
		ok := (deactivated && code == http.StatusGone) ||
			(!deactivated && code == http.StatusOK && containsAll(string(body), `"published":true`, `"updateCommitment":"`+want+`"`))
		if ok {
			c.mu.Lock()
			d.published = true
			c.mu.Unlock()
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// drive runs workers until the process exits, stop is closed, or total operations were sent.
func (c *crashClient) drive(p *anchordtest.Process, stop <-chan struct{}, total int) {
	done := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	var timer sync.WaitGroup
	timer.Go(func() {
		// A safety net: a round ends at its crash, the last one once total operations were
		// sent. It gives up only when nothing was sent for a minute: a fixed length (two, then
		// six minutes) cut the last round short on a loaded machine, and the test then failed on
		// "sent < total" before its counts ran.
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		last, since := -1, time.Now()
		for {
			select {
			case <-stop:
			case <-done:
			case <-tick.C:
				c.mu.Lock()
				sent := c.sent
				c.mu.Unlock()
				if sent != last {
					last, since = sent, time.Now()
				}
				if time.Since(since) < time.Minute {
					continue
				}
			}
			finish()
			return
		}
	})
	defer timer.Wait()
	var workers sync.WaitGroup
	for range 16 {
		workers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				c.mu.Lock()
				enough := c.sent >= total
				c.mu.Unlock()
				if enough || p.Exited() {
					return
				}
				if !c.step() && p.Exited() {
					return
				}
			}
		})
	}
	var follower sync.WaitGroup
	follower.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if p.Exited() {
				return
			}
			c.refresh()
		}
	})
	workers.Wait()
	finish()
	follower.Wait()
}

// TestCrashAnywhereLosesNothing drives mixed operations through the real binary and kills it
// with SIGKILL again and again — at each failpoint of the write path (before and after the
// queue's commit, after the batch files are stored, inside and after the anchor transaction,
// inside the observer's transaction, between two slices of an anchor's index rows) and twice at
// random moments — restarting it on the same
// data directory each time. Afterwards every accepted operation is anchored exactly once, no
// operation is anchored twice, and every DID resolves to the state its anchored operations give.
//
// The rounds send operations until their kill (about 2,000 in all: the slice round needs a
// batch of more than a slice), then a last run without a kill sends 500 more, on the DIDs the
// rounds left as well as new ones. ANCHORD_TEST_CLUSTER_FULL=1 has the last run make it 5,000
// in all; the rounds are the same, and the 2,800 more operations of a clean run took half of
// the test's six minutes in a busy machine's suite.
func TestCrashAnywhereLosesNothing(t *testing.T) {
	t.Parallel()
	// fullTotal also bounds a round whose failpoint never fires (it then fails on its wait).
	const lastOps, fullTotal = 500, 5000
	full := os.Getenv("ANCHORD_TEST_CLUSTER_FULL") == "1"
	began := time.Now()
	dir := t.TempDir()
	c := newCrashClient(t)
	rounds := []struct {
		failpoints string
		killAfter  time.Duration // external SIGKILL; 0: wait for the failpoint
		args       []string      // more flags for this round
	}{
		{failpoint.OpQueueBeforeCommit + "=40", 0, nil},
		{failpoint.BatchAfterCAS + "=3", 0, nil},
		{failpoint.BatchBeforeCommit + "=2", 0, nil},
		{failpoint.OpQueueAfterCommit + "=60", 0, nil},
		{failpoint.BatchAfterCommit + "=2", 0, nil},
		{failpoint.ObserverBeforeCommit + "=2", 0, nil},
		// Batches larger than a slice (observer.IndexTxRowsOneWriter), so the observer commits
		// part of an anchor's rows before it is killed. They are cut by their size, whatever the
		// rate: cut by age (5 s), a loaded machine sent 615–923 operations per batch, all inside
		// one slice, and the round never reached its failpoint.
		{failpoint.ObserverAfterSlice + "=1", 0, []string{"--batch-writer-timeout", "10m", "--max-operation-count", strconv.Itoa(observer.IndexTxRowsOneWriter + 200)}},
		{"", 1500 * time.Millisecond, nil},
		{"", 2300 * time.Millisecond, nil},
	}
	// start returns the process once it is healthy, or once it died on the way: a failpoint
	// may fire during start (the observer catches up on anchors a killed run left unobserved),
	// which is a crash like any other.
	start := func(failpoints string, more []string) (*anchordtest.Process, bool) {
		addr := anchordtest.FreeAddr(t)
		// A later flag wins: more overrides the batch settings.
		args := append([]string{"serve", "--host-url", addr, "--batch-writer-timeout", "200ms", "--max-operation-count", "300"}, more...)
		p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
			Args: args,
			Env:  []string{failpoint.EnvVar + "=" + failpoints},
			Dir:  dir, Addr: addr,
		})
		anchordtest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() bool {
			return p.Exited() || p.Health() == http.StatusOK
		}, "process at %s not healthy", addr)
		if p.Exited() {
			require.NotEmpty(t, failpoints, "process exited before becoming healthy:\n%s", p.Log())
			return p, false
		}
		c.setServer(addr)
		return p, true
	}
	for i, r := range rounds {
		p, up := start(r.failpoints, r.args)
		if !up {
			code, err := p.Wait(30 * time.Second)
			require.NoError(t, err)
			require.Equal(t, -1, code, "round %d: the process was killed during start, not exited", i)
			t.Logf("%s round %d (%s): killed during start", time.Since(began).Round(time.Millisecond), i, r.failpoints)
			continue
		}
		stop := make(chan struct{})
		if r.killAfter > 0 {
			go func() {
				time.Sleep(r.killAfter)
				p.Signal(syscall.SIGKILL)
				close(stop)
			}()
		}
		c.drive(p, stop, fullTotal)
		code, err := p.Wait(30 * time.Second)
		require.NoError(t, err, "round %d (%s) did not end", i, r.failpoints)
		require.Equal(t, -1, code, "round %d: the process was killed, not exited", i)
		c.mu.Lock()
		t.Logf("%s round %d (%s): killed; %d operations sent so far, %d accepted, %d without answer", time.Since(began).Round(time.Millisecond), i, r.failpoints, c.sent, len(c.accepted), len(c.unknown))
		c.mu.Unlock()
	}

	// The last run: no kill. Send lastOps more (at full size, up to fullTotal in all), then wait
	// until everything accepted is anchored and the queue is empty.
	p, _ := start("", nil)
	c.mu.Lock()
	total := c.sent + lastOps
	if full {
		total = max(total, fullTotal)
	}
	c.mu.Unlock()
	c.drive(p, make(chan struct{}), total)
	t.Logf("%s all operations sent", time.Since(began).Round(time.Millisecond))
	api := c.api()
	anchordtest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		return api.metric(t, "anchord_opqueue_length") == 0
	}, "operation queue never drained")
	// An empty queue means every accepted operation's anchor committed; resolution below also
	// needs every anchor observed.
	anchordtest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		for _, a := range api.anchors(t) {
			if a.ObservedAt == nil {
				return false
			}
		}
		return true
	}, "anchors never all observed")
	t.Logf("%s queue drained and anchors observed", time.Since(began).Round(time.Millisecond))
	anchored := api.anchoredOperations(t, sidetree.DefaultProfile())

	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.rejected, "every generated operation is valid")
	require.GreaterOrEqual(t, c.sent, total)

	counts := map[opKey]int{}
	bySuffix := map[string][]sidetree.AnchoredOperation{}
	for _, op := range anchored {
		k := keyOf(t, op)
		counts[k]++
		bySuffix[op.Suffix] = append(bySuffix[op.Suffix], op)
	}
	for k, n := range counts {
		require.Equal(t, 1, n, "%v anchored %d times", k, n)
		if c.accepted[k] == 0 {
			require.True(t, c.unknown[k], "%v anchored but never sent", k)
		}
	}
	for k := range c.accepted {
		require.Equal(t, 1, counts[k], "accepted %v anchored %d times", k, counts[k])
	}
	t.Logf("%d operations sent, %d accepted, %d without answer (%d of those anchored), %d anchors",
		c.sent, len(c.accepted), len(c.unknown), len(counts)-len(c.accepted), len(api.anchors(t)))

	// Every DID resolves to the state its anchored operations give, and a DID the client never
	// lost track of has exactly the keys the client last installed.
	profile := sidetree.DefaultProfile()
	for _, d := range c.dids {
		did := "did:sidetree:" + d.id.Suffix
		code, body, err := api.resolve(did)
		require.NoError(t, err)
		state := sidetree.Resolve(profile, d.id.Suffix, bySuffix[d.id.Suffix])
		parsed, err := sidetree.ParseDID(profile, did)
		require.NoError(t, err)
		want, status := sidetree.RenderResolution(parsed, state)
		switch status {
		case sidetree.ResolutionNotFound:
			require.Equal(t, http.StatusNotFound, code, did)
			require.True(t, d.uncertain, "%s: accepted create not resolvable", did)
			continue
		case sidetree.ResolutionDeactivated:
			require.Equal(t, http.StatusGone, code, did)
		default:
			require.Equal(t, http.StatusOK, code, did)
		}
		require.JSONEq(t, string(want), string(body), did)
		if !d.uncertain {
			require.Equal(t, d.deactivated, state.Deactivated, did)
			if !d.deactivated {
				require.Equal(t, d.id.UpdateKey.Commitment(), state.UpdateCommitment, did)
				require.Equal(t, d.id.RecoveryKey.Commitment(), state.RecoveryCommitment, did)
			}
		}
	}
}

func keyOf(t *testing.T, op sidetree.AnchoredOperation) opKey {
	t.Helper()
	parsed, err := sidetree.ParseOperation(op.Request, sidetree.DefaultProfile())
	require.NoError(t, err)
	return opKey{string(parsed.Type), parsed.Suffix, parsed.RevealValue}
}
