package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// proofMonitorInterval is A's --vct-monitoring-interval in these tests; its task manager
// checks every second, so that a run is never held back longer than that.
const proofMonitorInterval = 2 * time.Second

// TestProofMonitorConfirmsLoggedProofsAndFindsBrokenPromises: A's policy is
// "OutOf(1,system) LogRequired", and B and C keep witness logs. (1) Every proof A received is
// confirmed by inclusion in its witness's log within two monitor intervals. (2) B is restarted
// as a witness that answers Accept but never appends: each promise it makes is marked broken
// after its deadline (metric, error log, B listed as faulty by `anchord admin witness list`),
// no anchor completes on B's proof (each credential published since carries C's verifying
// proof), and every operation accepted at A is still anchored and published, once.
func TestProofMonitorConfirmsLoggedProofsAndFindsBrokenPromises(t *testing.T) {
	t.Parallel()
	// A short clock skew: a promise is broken at its deadline plus the skew.
	skew := []string{"--max-clock-skew", "2s"}
	a := startDomain(t, "A", append(append(slices.Clone(witnessTiming), skew...), "--vct-monitoring-interval", proofMonitorInterval.String(), "--task-manager-check-interval", "1s")...)
	// The witnesses' receipts end 8 s after they sign: that is the deadline of their promises.
	b := startDomain(t, "B", append([]string{"--witness-log", "--max-witness-delay", "8s"}, skew...)...)
	c := startDomain(t, "C", append([]string{"--witness-log", "--max-witness-delay", "8s"}, skew...)...)
	a.admin("policy", "set", "OutOf(1,system) LogRequired")
	a.invite(b, c)

	added := func() float64 { return witnessMetric(t, a, `anchord_witness_proofs_total{outcome="added"}`) }
	verified := func() float64 { return witnessMetric(t, a, `anchord_witness_log_promises_total{outcome="verified"}`) }
	broken := func() float64 { return witnessMetric(t, a, `anchord_witness_log_promises_total{outcome="broken"}`) }

	load := newFedLoad(t, a.api)
	for range 4 {
		load.creates(20, 4)
		time.Sleep(500 * time.Millisecond) // one batch, so one anchor, per round
	}
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return load.publishedAt(a) == len(load.dids())
	}, "A's DIDs are published")
	proofs := added()
	require.Positive(t, proofs)
	start := time.Now()
	anchordtest.Eventually(t, 2*proofMonitorInterval, 100*time.Millisecond, func() bool { return verified() == proofs },
		"every one of A's %v proofs is confirmed within two monitor intervals", proofs)
	t.Logf("%v proofs confirmed in the witnesses' logs %s after the last DID was published", proofs, time.Since(start).Round(time.Millisecond))
	require.Zero(t, broken())

	// B now promises entries it never appends. An anchor's DIDs are published (indexed) before
	// its Create reaches the outbox, so the snapshot of what was published with B's honest
	// proofs waits for one Create per completed anchor.
	a.awaitCreatesOfCompletedAnchors()
	publishedBefore := map[string]bool{}
	for _, cred := range a.publishedCredentials() {
		publishedBefore[cred.ID()] = true
	}
	b.stop()
	b.env = []string{"ANCHORD_FAILPOINTS=" + failpoint.WitnessSkipLogAppend + "=1000000"}
	b.start()
	before := added()
	// A picks one of B and C at random for each anchor: batches until B has signed a few.
	for round := 0; round < 6 || (round < 30 && witnessMetric(t, b, `anchord_witness_offers_received_total{outcome="signed"}`) < 3); round++ {
		load.creates(20, 4)
		time.Sleep(500 * time.Millisecond)
	}
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return load.publishedAt(a) == len(load.dids())
	}, "A's DIDs are published, B's broken promises notwithstanding")
	lying := witnessMetric(t, b, `anchord_witness_offers_received_total{outcome="signed"}`)
	require.Positive(t, lying, "B answered some Offers without logging")
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		return verified()+broken() == added()
	}, "every promise is settled once its deadline has passed")
	t.Logf("after B's restart: %v proofs added, %v signed by B, %v broken, %v verified in all",
		added()-before, lying, broken(), verified())
	require.Positive(t, broken())
	require.LessOrEqual(t, broken(), lying, "only B's promises are broken")
	require.Equal(t, proofs+(added()-before-broken()), verified(), "C's promises are kept")

	var list struct {
		Items []federation.RelationshipView `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.admin("witness", "list", "--json")), &list))
	for _, w := range list.Items {
		switch w.Actor {
		case b.actor:
			require.True(t, w.Faulty, "B is listed as faulty")
			require.Equal(t, int64(broken()), w.BrokenPromises)
		case c.actor:
			require.False(t, w.Faulty, "C kept its promises")
		}
	}
	require.Contains(t, a.admin("witness", "list"), fmt.Sprintf("faulty: %d broken", int64(broken())))
	require.True(t, slices.ContainsFunc(a.logLines("ERROR"), func(l string) bool {
		return strings.Contains(l, "broke its log promise") && strings.Contains(l, b.actor)
	}), "an error log names the witness")

	// Under LogRequired B's proofs never counted: every anchor published since B lied carries
	// C's proof, which verifies, and C's promises were all kept.
	didOf := func(d *relayDomain) string {
		did, err := vc.DIDWeb("http://" + d.addr)
		require.NoError(t, err)
		return did
	}
	a.awaitCreatesOfCompletedAnchors()
	since := 0
	for _, cred := range a.publishedCredentials() {
		if publishedBefore[cred.ID()] {
			continue
		}
		since++
		signers := verifiedSigners(t, cred)
		require.Equal(t, didOf(a), signers[0], "the origin's proof comes first")
		require.Contains(t, signers[1:], didOf(c), "credential %s carries C's proof", cred.ID())
	}
	require.Positive(t, since)
	t.Logf("%d anchors published after B's restart, each with C's proof", since)

	var failed int
	for _, an := range a.api.anchors(t) {
		if an.Status == store.AnchorFailed {
			// An anchor that waited for B's promise past its deadline: its operations were
			// given back and anchored again (checked below).
			failed++
			continue
		}
		require.Equal(t, store.AnchorCompleted, an.Status, "anchor %d", an.Seq)
	}
	t.Logf("%d anchors failed and given back", failed)

	a.stop()
	dids := load.dids()
	suffixes := make([]string, len(dids))
	for i, did := range dids {
		suffixes[i] = suffixOf(did)
	}
	rows := a.indexRows(suffixes)
	for _, s := range suffixes {
		require.Len(t, rows[s], 1, "each operation indexed once: %s", s)
	}
}
