package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// witnessTiming makes the anchor status monitor quick enough for tests: it runs every second,
// looks at an anchor 2 s after its Offer, and fails an anchor 8 s + 2 s after it was written.
var witnessTiming = []string{
	"--anchor-backend", "witness", "--anchor-status-monitoring-interval", "1s",
	"--anchor-status-in-process-grace-period", "2s", "--max-witness-delay", "8s",
}

// patientWitnessTiming is witnessTiming for tests whose witnesses all answer: an anchor fails
// only after a minute without a proof. With 8 s, a busy machine (the race detector, a cluster
// and two domains on two cores) failed anchors whose witnesses were merely slow, and a test
// that requires every anchor completed then failed for the machine's sake.
var patientWitnessTiming = append(slices.Clone(witnessTiming), "--max-witness-delay", "1m")

// invite makes d invite each of witnesses through the admin CLI and waits for their Accepts.
// An anchord witness lists d first (--invite-witness-auth-policy is accept-list by default);
// an Orb witness accepts every invitation by its own default.
func (d *relayDomain) invite(witnesses ...*relayDomain) {
	d.t.Helper()
	for _, w := range witnesses {
		if w.process() != nil {
			require.Contains(d.t, w.admin("acceptlist", "add", "--type", "invite-witness", d.actor), d.actor)
		}
		require.Contains(d.t, d.admin("witness", "add", w.actor), w.actor)
	}
	anchordtest.Eventually(d.t, 30*time.Second, 100*time.Millisecond, func() bool {
		var list struct {
			Items []federation.RelationshipView `json:"items"`
		}
		if err := json.Unmarshal([]byte(d.admin("witness", "list", "--json")), &list); err != nil {
			return false
		}
		for _, w := range witnesses {
			if !slices.ContainsFunc(list.Items, func(r federation.RelationshipView) bool {
				return r.Actor == w.actor && r.Status == store.RelationshipAccepted
			}) {
				return false
			}
		}
		return true
	}, "%s's witnesses accepted", d.name)
}

// publishedCredentials returns the anchor credentials of the Creates in a domain's outbox.
func (d *relayDomain) publishedCredentials() []*vc.Credential {
	d.t.Helper()
	var out []*vc.Credential
	for _, raw := range d.outboxCreateActivities() {
		a, err := activity.Parse(raw)
		require.NoError(d.t, err)
		link := (&activity.Linkset{Linkset: a.Object.AnchorEvent.Object.Linkset}).Link()
		content, err := link.Replies[0].Content(vc.MaxDocumentSize)
		require.NoError(d.t, err)
		c, err := vc.ParseCredential(content)
		require.NoError(d.t, err)
		out = append(out, c)
	}
	return out
}

// awaitCreatesOfCompletedAnchors waits until d's outbox holds a Create for every anchor d has
// completed: the publisher posts it after the anchor is indexed, so DIDs resolve as published
// a moment before their anchor's Create is there.
func (d *relayDomain) awaitCreatesOfCompletedAnchors() {
	d.t.Helper()
	anchordtest.Eventually(d.t, time.Minute, 200*time.Millisecond, func() bool {
		completed := 0
		for _, an := range d.api.anchors(d.t) {
			if an.Status == store.AnchorCompleted {
				completed++
			}
		}
		return len(d.outboxCreateActivities()) == completed
	}, "%s's outbox holds a Create of each completed anchor", d.name)
}

// verifiedSigners verifies every proof of c against the did:web documents of the loopback
// domains and returns the domains (their did:web) whose proofs verify.
func verifiedSigners(t *testing.T, c *vc.Credential) []string {
	t.Helper()
	resolve, err := vc.NewWebResolver(vc.WebResolverConfig{Scheme: "http", Client: loopbackPeers(t)})
	require.NoError(t, err)
	var out []string
	for _, p := range c.Proofs() {
		require.NoError(t, vc.VerifyProof(context.Background(), c, p, resolve), "proof by %s", p.VerificationMethod)
		did, _, _ := strings.Cut(p.VerificationMethod, "#")
		out = append(out, did)
	}
	return out
}

// TestWitnessedAnchorsResolveEverywhere: A's policy is OutOf(1,system) with system witnesses B
// and C, which follow A. Every one of 500 DIDs (2,000 with ANCHORD_TEST_FED_FULL=1) created at
// A resolves at A, B and C, and every published credential carries A's proof and at least one
// witness's, each verifying with its domain's did:web key; /vc serves the same proofs.
func TestWitnessedAnchorsResolveEverywhere(t *testing.T) {
	t.Parallel()
	creates := 500
	if os.Getenv("ANCHORD_TEST_FED_FULL") == "1" {
		creates = 2000
	}
	a := startDomain(t, "A", patientWitnessTiming...)
	b := startDomain(t, "B")
	c := startDomain(t, "C")
	a.admin("policy", "set", "OutOf(1,system)")
	a.invite(b, c)
	b.follow(a)
	c.follow(a)

	load := newFedLoad(t, a.api)
	load.creates(creates, 16)
	took := waitSame(t, b, a, load.dids(), 2*time.Minute)
	waitSame(t, c, a, load.dids(), time.Minute)
	t.Logf("%d creates at A resolve alike at B and C %s after the last one", creates, took)

	creds := a.publishedCredentials()
	require.NotEmpty(t, creds)
	didOf := func(d *relayDomain) string {
		did, err := vc.DIDWeb("http://" + d.addr)
		require.NoError(t, err)
		return did
	}
	for _, cred := range creds {
		signers := verifiedSigners(t, cred)
		require.Equal(t, didOf(a), signers[0], "the origin's proof comes first")
		require.GreaterOrEqual(t, len(signers), 2, "proofs of %s", cred.ID())
		for _, s := range signers[1:] {
			require.Contains(t, []string{didOf(b), didOf(c)}, s)
		}

		id := cred.ID()[strings.LastIndex(cred.ID(), "/")+1:]
		resp, err := http.Get("http://" + a.addr + "/vc/" + id)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		served, err := vc.ParseCredential(body)
		require.NoError(t, err)
		require.Len(t, served.Proofs(), len(signers))
	}
	t.Logf("%d anchors published, each with its origin's and its witnesses' verifying proofs", len(creds))
	for _, d := range []*relayDomain{a, b, c} {
		for _, l := range d.logLines("ERROR") {
			t.Logf("%s: %s", d.name, l)
		}
	}
}

// witnessMetric reads a counter of d: one series when it names labels (0 while it does not
// exist yet), else the family's sum.
func witnessMetric(t *testing.T, d *relayDomain, series string) float64 {
	t.Helper()
	name, _, labelled := strings.Cut(series, "{")
	if !labelled {
		return d.api.metricTotal(t, name)
	}
	v, _ := scrape(t, d, series)
	return v
}

// publishedAt counts the load's DIDs that resolve at d as published.
func (l *fedLoad) publishedAt(d *relayDomain) int {
	n := 0
	for _, did := range l.dids() {
		if r := d.resolve(did); r.status == http.StatusOK && r.published {
			n++
		}
	}
	return n
}

// TestWitnessesThatDoNotAnswerAreReplacedAndTheirAnchorsFail: A's policy is OutOf(1,system).
// (1) B, A's only witness, is killed; anchors offered to it wait until C is invited, and the
// status monitor offers them to C: they complete. (2) B and C are both down for longer than
// --max-witness-delay plus the grace period: the anchors fail and their operations go back to
// the queue (metric, log, anchors listed failed). (3) Once C is back, every operation accepted
// at A is anchored, and indexed exactly once.
func TestWitnessesThatDoNotAnswerAreReplacedAndTheirAnchorsFail(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", witnessTiming...)
	b := startDomain(t, "B")
	c := startDomain(t, "C")
	a.admin("policy", "set", "OutOf(1,system)")
	a.invite(b)

	b.process().Kill()
	first := newFedLoad(t, a.api)
	first.creates(100, 8)
	a.waitAnchors(1, 30*time.Second)
	a.invite(c)
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return first.publishedAt(a) == len(first.dids())
	}, "A's first DIDs are published after re-selection")
	require.Positive(t, witnessMetric(t, a, `anchord_witness_offers_total{reason="reselect"}`), "the monitor offered to C")

	c.process().Kill()
	second := newFedLoad(t, a.api)
	second.creates(100, 8)
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return witnessMetric(t, a, "anchord_witness_anchors_failed_total") > 0
	}, "an anchor fails for lack of witnesses")
	require.Positive(t, witnessMetric(t, a, "anchord_witness_requeued_operations_total"))
	require.Zero(t, second.publishedAt(a), "nothing is published without a witness")
	failed := 0
	for _, an := range a.api.anchors(t) {
		if an.Status == store.AnchorFailed {
			failed++
			require.NotEmpty(t, an.Credential, "a failed witnessed anchor names its credential")
		}
	}
	require.Positive(t, failed, "failed anchors stay listed")

	c.start()
	anchordtest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		return second.publishedAt(a) == len(second.dids())
	}, "A's second DIDs are published once C is back")
	t.Logf("anchors failed %g, operations queued again %g, re-offers %g",
		witnessMetric(t, a, "anchord_witness_anchors_failed_total"), witnessMetric(t, a, "anchord_witness_requeued_operations_total"),
		witnessMetric(t, a, `anchord_witness_offers_total{reason="reselect"}`))

	a.stop()
	all := append(first.dids(), second.dids()...)
	suffixes := make([]string, len(all))
	for i, did := range all {
		suffixes[i] = suffixOf(did)
	}
	rows := a.indexRows(suffixes)
	for _, s := range suffixes {
		require.Len(t, rows[s], 1, "index rows of %s", s)
	}
}

// TestWitnessedAnchorsOfAClusterCompleteOnce: A is three instances on PostgreSQL and RabbitMQ
// behind one address, offering its anchors to B and C (OutOf(1,system)); B follows A. The
// second instance is killed (SIGKILL) the first time it has recorded a witness's proof and
// completed the anchor, before that transaction commits, then restarted. Every DID resolves
// at A and B, every anchor is completed and published once, and B's index holds each
// operation once.
func TestWitnessedAnchorsOfAClusterCompleteOnce(t *testing.T) {
	t.Parallel()
	crash := []string{"ANCHORD_FAILPOINTS=" + failpoint.WitnessBeforeCompleteCommit + "=1"}
	a, cluster := startClusteredDomain(t, [][]string{nil, crash, nil}, patientWitnessTiming...)
	b := startDomain(t, "B")
	c := startDomain(t, "C")
	a.admin("policy", "set", "OutOf(1,system)")
	a.invite(b, c)
	b.follow(a)

	victim := cluster.nodes[1]
	load := newFedLoad(t, a.api)
	for round := 0; round < 30 && !victim.process().Exited(); round++ {
		load.creates(20, 4)
		time.Sleep(400 * time.Millisecond) // one batch per round
	}
	require.True(t, victim.process().Exited(), "the second instance crashed while completing an anchor")
	victim.env = nil // restarted without the failpoint, or it would crash at its next completion
	victim.start()
	load.creates(20, 4)

	took := waitSame(t, b, a, load.dids(), 3*time.Minute)
	t.Logf("%d creates at a clustered A resolve at B %s after the last one", len(load.dids()), took)
	anchors := a.api.anchors(t)
	for _, an := range anchors {
		require.Equal(t, store.AnchorCompleted, an.Status, "anchor %d", an.Seq)
		require.NotEmpty(t, an.Credential)
	}
	for hashlink, n := range a.outboxCreates() {
		require.Equal(t, 1, n, "Creates of %s", hashlink)
	}
	require.Len(t, a.outboxCreates(), len(anchors), "every anchor published")

	b.stop()
	suffixes := make([]string, 0, len(load.dids()))
	for _, did := range load.dids() {
		suffixes = append(suffixes, suffixOf(did))
	}
	rows := b.indexRows(suffixes)
	for _, s := range suffixes {
		require.Len(t, rows[s], 1, "index rows of %s", s)
	}
}

// TestWitnessFigures measures accept→resolvable at the origin at 1,000 creates/s for 20 s
// with the local backend, with one witness (OutOf(1,system)), with two (every system witness)
// and with one witness that logs each credential before it signs it (checkpoints every second,
// the default, and every 200 ms), interleaved twice in one sitting. It is a measurement, not a check: run it with
// ANCHORD_TEST_WITNESS_FIGURES=1 (without -race), alone on the machine.
func TestWitnessFigures(t *testing.T) { //nolint:paralleltest // a measurement needs the machine to itself
	if os.Getenv("ANCHORD_TEST_WITNESS_FIGURES") != "1" {
		t.Skip("set ANCHORD_TEST_WITNESS_FIGURES=1 to measure the witnessing figures")
	}
	b := startDomain(t, "B")
	c := startDomain(t, "C")
	logged := startDomain(t, "L", "--witness-log")
	quick := startDomain(t, "Q", "--witness-log", "--witness-log-checkpoint-interval", "200ms")
	setups := []struct {
		name   string
		policy string
		invite []*relayDomain
	}{
		{"local backend", "", nil},
		{"one witness", "OutOf(1,system)", []*relayDomain{b}},
		{"two witnesses", "MinPercent(100,system)", []*relayDomain{b, c}},
		{"one witness with a log", "OutOf(1,system) LogRequired", []*relayDomain{logged}},
		{"one witness with a log, checkpoints every 200 ms", "OutOf(1,system) LogRequired", []*relayDomain{quick}},
	}
	for round := 1; round <= 2; round++ {
		for _, s := range setups {
			var a *relayDomain
			if s.invite == nil {
				a = startDomain(t, "A")
			} else {
				a = startDomain(t, "A", witnessTiming...)
				a.admin("policy", "set", s.policy)
				a.invite(s.invite...)
			}
			out := runLoadgen(t, a, "--rate", "1000", "--duration", "20s", "--concurrency", "64", "--warmup-dids", "0", "--sample-every", "20")
			t.Logf("round %d, %s:\n%s", round, s.name, out)
			a.stop()
		}
	}
}

// TestLogRequiredCountsOnlyWitnessesWithALog: A's policy is OutOf(1,system) LogRequired; B
// keeps a witness log, C does not. Every anchor is offered to B only, B logs each credential
// before it signs it (its log grows by one entry per anchor), and C is never asked.
func TestLogRequiredCountsOnlyWitnessesWithALog(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", witnessTiming...)
	b := startDomain(t, "B", "--witness-log")
	c := startDomain(t, "C")
	a.admin("policy", "set", "OutOf(1,system) LogRequired")
	a.invite(b, c)
	// The origin reads B's and C's WebFinger as their Accepts arrive, so it knows which keeps
	// a log before the first anchor.

	load := newFedLoad(t, a.api)
	for range 3 {
		load.creates(30, 4)
		time.Sleep(500 * time.Millisecond)
	}
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return load.publishedAt(a) == len(load.dids())
	}, "A's DIDs are published")
	anchors := a.api.anchors(t)
	for _, an := range anchors {
		for _, w := range an.Witnesses {
			require.Equal(t, w.Actor == b.actor, w.Selected, "anchor %d: only the witness with a log is asked (%s)", an.Seq, w.Actor)
		}
	}
	require.Zero(t, witnessMetric(t, c, "anchord_witness_offers_received_total"), "C is never asked")
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + b.addr + "/log/checkpoint")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		lines := strings.Split(string(body), "\n")
		return len(lines) > 1 && lines[1] == fmt.Sprint(len(anchors))
	}, "B's log holds one credential per anchor")
	requirePrivateTree(t, filepath.Join(b.dir, "log"))
}

// TestFirstAnchorAfterAnInvitationIsWitnessedAtOnce: A, with the status monitor's defaults
// (every 10 s, a one-minute grace period), invites B, which keeps a log, under
// OutOf(1,system) LogRequired. A reads B's log as B's Accept is handled, so the first anchor
// after it is offered to B as it is written and completes in seconds, not after the grace
// period. (Before, A learnt B's log at its next background read; the anchor found no eligible
// witness and waited for the monitor: 65 s.)
func TestFirstAnchorAfterAnInvitationIsWitnessedAtOnce(t *testing.T) {
	t.Parallel()
	b := startDomain(t, "B", "--witness-log", "--witness-log-checkpoint-interval", "200ms")
	a := startDomain(t, "A", "--anchor-backend", "witness")
	a.admin("policy", "set", "OutOf(1,system) LogRequired")
	a.invite(b)

	load := newFedLoad(t, a.api)
	start := time.Now()
	load.creates(1, 1)
	anchordtest.Eventually(t, 50*time.Second, 50*time.Millisecond, func() bool {
		return load.publishedAt(a) == 1
	}, "the first DID is published at A")
	took := time.Since(start)
	t.Logf("the first witnessed anchor after the invitation: create to published at A in %s", took.Round(time.Millisecond))

	require.Equal(t, 1.0, witnessMetric(t, a, `anchord_witness_offers_total{reason="first"}`), "offered to B as it was written")
	require.Zero(t, witnessMetric(t, a, `anchord_witness_offers_total{reason="reselect"}`), "not by the status monitor")
	anchors := a.api.anchors(t)
	require.Len(t, anchors, 1)
	require.Len(t, anchors[0].Witnesses, 1)
	require.True(t, anchors[0].Witnesses[0].HasLog)
	require.True(t, anchors[0].Witnesses[0].Selected)
}
