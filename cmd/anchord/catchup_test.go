package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/failpoint"
)

// TestCatchUpOfANewFollowerSurvivesKills: A holds a loaded domain; B, new, follows it and
// catches up through the activity sync. B is killed twice while it catches up — once inside the
// transaction that indexes one of A's anchors (a failpoint), once from outside with SIGKILL at
// whatever it was doing — and restarted each time. Then B holds every anchor of A, each
// operation indexed once, and every DID of A resolves at B as at A.
//
// The suite loads 3,000 creates, about thirty anchors (6,000 took three minutes of a busy
// machine's suite, 20,000 six); ANCHORD_TEST_FED_FULL=1 loads 6,000 and
// ANCHORD_TEST_CATCHUP_OPS sets another count (200000 for the size of issue 30's must-show).
func TestCatchUpOfANewFollowerSurvivesKills(t *testing.T) {
	t.Parallel()
	ops := 3_000
	if os.Getenv("ANCHORD_TEST_FED_FULL") == "1" {
		ops = 6_000
	}
	if v := os.Getenv("ANCHORD_TEST_CATCHUP_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "ANCHORD_TEST_CATCHUP_OPS")
		ops = n
	}
	// Batches of a thirtieth of the load (100 to 2,000 operations): the kills land among a few
	// dozen anchors, not three.
	a := startDomain(t, "A", "--max-operation-count", strconv.Itoa(min(2000, max(100, ops/30))))
	accepted := filepath.Join(t.TempDir(), "accepted.txt")
	t.Log("A loaded:\n" + runLoadgen(t, a, "--count", strconv.Itoa(ops), "--concurrency", "64", "--accepted-out", accepted))
	dids := createdDIDs(t, accepted)
	require.Len(t, dids, ops)
	anchordtest.Eventually(t, 5*time.Minute, 200*time.Millisecond, func() bool {
		return a.api.metric(t, "anchord_opqueue_length") == 0 && a.resolve(dids[len(dids)-1]).published
	}, "A anchored every create")
	total := len(a.api.anchors(t))

	// B's first process kills itself inside the indexing transaction of its third of A's anchors.
	b := startDomainEnv(t, "B", []string{failpoint.EnvVar + "=" + failpoint.ObserverBeforeForeignCommit + "=" + strconv.Itoa(max(total/3, 1))})
	start := time.Now()
	b.follow(a)
	_, err := b.process().Wait(5 * time.Minute)
	require.NoError(t, err, "B reached the failpoint")
	first := len(b.anchorRows())
	t.Logf("B killed at its failpoint after %s with %d of %d anchors", time.Since(start).Round(time.Millisecond), first, total)
	require.Less(t, first, total, "killed during catch-up")

	// Restarted, it goes on from there; SIGKILL once it holds two thirds.
	b.env = nil
	b.start()
	anchordtest.Eventually(t, 5*time.Minute, 20*time.Millisecond, func() bool {
		return len(b.api.anchors(t)) >= 2*total/3
	}, "B resumes its catch-up")
	b.process().Kill()
	_, err = b.process().Wait(30 * time.Second)
	require.NoError(t, err)
	second := len(b.anchorRows())
	t.Logf("B killed from outside after %s with %d of %d anchors", time.Since(start).Round(time.Millisecond), second, total)
	require.GreaterOrEqual(t, second, first, "what B indexed before the first kill is still there")

	b.start()
	b.waitAnchors(total, 10*time.Minute)
	took := time.Since(start)
	t.Logf("B indexed all %d anchors of %d operations %s after it started following, kills and restarts included (%.0f operations/s)",
		total, ops, took.Round(time.Millisecond), float64(ops)/took.Seconds())
	// The last process's CPU over the operations it indexed (anchors are of about equal size):
	// on a shared machine the rate says little, this says what catching up costs.
	cpu := b.api.metric(t, "process_cpu_seconds_total")
	t.Logf("B's last process: %.1f s of CPU for ~%d operations, ~%.0f µs per operation (start-up included)",
		cpu, ops*(total-second)/total, cpu*1e6/float64(max(ops*(total-second)/total, 1)))

	differ := sameAsInParallel(b, a, dids, 8)
	require.Zero(t, differ, "of %d DIDs, %d do not resolve at B as at A", len(dids), differ)
	b.stop()
	suffixes := make([]string, len(dids))
	for i, did := range dids {
		suffixes[i] = suffixOf(did)
	}
	for s, rows := range b.indexRows(suffixes) {
		require.Len(t, rows, 1, "index rows of %s", s)
		require.Equal(t, a.actor, rows[0].Origin)
	}
}

// createdDIDs reads the DIDs of the creates in a loadgen --accepted-out file.
func createdDIDs(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if suffix, ok := strings.CutPrefix(sc.Text(), "create "); ok {
			suffix, _, _ = strings.Cut(suffix, " ")
			out = append(out, "did:sidetree:"+suffix)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// sameAsInParallel is sameAs over workers connections at once; it returns how many DIDs differ.
func sameAsInParallel(d, origin *relayDomain, dids []string, workers int) int {
	var mu sync.Mutex
	differ := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			n := 0
			for i := w; i < len(dids); i += workers {
				n += d.sameAs(origin, dids[i:i+1])
			}
			mu.Lock()
			differ += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return differ
}
