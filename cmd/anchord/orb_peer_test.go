package main

// Orb and an anchord domain in the did:orb profile, each the other's peer: Orb resolves
// anchord's DIDs, and anchord witnesses Orb's anchors.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/vc"
)

// orbActor is the Orb domain's service actor.
const orbActor = "http://127.0.0.1/services/orb"

// startOrbPeer starts an anchord domain in the did:orb profile on orbPeerAddr, where Orb can
// resolve its did:web (did:web:127.0.0.2).
func startOrbPeer(t *testing.T, name string, extra ...string) *relayDomain {
	t.Helper()
	requireFree(t, orbPeerAddr)
	d := &relayDomain{t: t, name: name, addr: orbPeerAddr, dir: t.TempDir(), actor: "http://127.0.0.2" + federation.ServicePath, api: newClient(orbPeerAddr)}
	d.args = append([]string{"serve", "--did-method", "orb", "--host-url", orbPeerAddr, "--data-dir", d.dir, "--external-endpoint", "http://127.0.0.2"}, fedTiming...)
	d.args = append(d.args, extra...)
	d.start()
	return d
}

// orbAnswer is what Orb answers for a DID.
type orbAnswer struct {
	status    int
	document  map[string]any
	published bool
	canonical string
}

// resolveAtOrb resolves did at Orb.
func resolveAtOrb(t *testing.T, did string) orbAnswer {
	t.Helper()
	resp, err := http.Get("http://" + orbAddr + "/sidetree/v1/identifiers/" + did)
	if err != nil {
		return orbAnswer{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return orbAnswer{status: resp.StatusCode}
	}
	var r struct {
		Document map[string]any `json:"didDocument"`
		Meta     struct {
			CanonicalID string `json:"canonicalId"`
			Method      struct {
				Published bool `json:"published"`
			} `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	if json.Unmarshal(body, &r) != nil {
		// Called from the latency poller's goroutines too, where a test may not fail: an answer
		// that does not parse counts as none.
		return orbAnswer{status: -1}
	}
	return orbAnswer{status: resp.StatusCode, document: r.Document, published: r.Meta.Method.Published, canonical: r.Meta.CanonicalID}
}

// withoutID returns a DID document with its own DID replaced by a placeholder: Orb names the
// document by the DID's canonical form, anchord by the form it was asked for.
func withoutID(t *testing.T, doc map[string]any) string {
	t.Helper()
	id, _ := doc["id"].(string)
	require.NotEmpty(t, id, "document id")
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return strings.ReplaceAll(string(b), id, "<did>")
}

// orbCanonicalIDs computes, from the Creates in an anchord domain's outbox, the canonical ID
// Orb gives each DID: did:orb:<resource hash of the anchor event's url>:<suffix> of the anchor
// of its create. An update does not move it (Orb's operation applier keeps the create's, or
// the last recover's, canonical reference; only versionId follows the latest operation).
func orbCanonicalIDs(t *testing.T, d *relayDomain) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, raw := range d.outboxCreateActivities() {
		a, err := activity.Parse(raw)
		require.NoError(t, err)
		h, err := a.Object.AnchorEvent.Hashlink()
		require.NoError(t, err)
		content, err := a.Object.AnchorEvent.Object.Link().AnchorContent()
		require.NoError(t, err)
		for _, op := range content.Operations {
			if op.Previous == "" {
				out[op.Suffix] = "did:orb:" + h.ResourceHash() + ":" + op.Suffix
			}
		}
	}
	return out
}

// orbFollows makes Orb follow d through Orb's outbox and waits until each side lists the other.
func orbFollows(t *testing.T, d *relayDomain) {
	t.Helper()
	follow := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","type":"Follow","actor":%q,"to":%q,"object":%q}`, orbActor, d.actor, d.actor)
	code, body := orbRequest(t, http.MethodPost, "/services/orb/outbox", []byte(follow))
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return strings.Contains(d.admin("followers", "list"), orbActor+"  accepted")
	}, "anchord accepted Orb's Follow")
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		code, body := orbRequest(t, http.MethodGet, "/services/orb/following?page=true", nil)
		return code == http.StatusOK && strings.Contains(string(body), d.actor)
	}, "Orb lists anchord in its following")
}

// quantile returns the p-th percentile (0 < p ≤ 1) of sorted durations.
func quantile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// orbLoadSize is how many DIDs TestOrbResolvesAnchordDIDs creates and updates.
func orbLoadSize() (creates, updates int) {
	if v := strings.TrimSpace(os.Getenv("ANCHORD_TEST_ORB_FULL")); v != "" && v != "0" {
		return 1000, 200
	}
	return 100, 20
}

// TestOrbResolvesAnchordDIDs: a real Orb domain follows an anchord domain in the did:orb
// profile. 100 creates are posted to anchord, and 20 updates, each as soon as its create is
// anchored; every DID then resolves at Orb, published, with the document anchord resolves and
// the canonical ID Orb computes from anchord's anchor of its create (did:orb:<anchor
// hash>:<suffix>): Orb read anchord's batch files through the hashlinks that name them,
// verified anchord's anchor credential against its did:web, applied every update (each
// anchored in a later whole second than its create, as anchord spaces its did:orb anchors),
// and logged no warning or error doing so. It prints Orb's accept→resolvable latency beside
// anchord's own, measured by the same poller in the same run.
func TestOrbResolvesAnchordDIDs(t *testing.T) {
	orb := startOrb(t)
	d := startOrbPeer(t, "anchord")
	began := time.Now()
	orbFollows(t, d)
	mark := orb.mark()
	nCreates, nUpdates := orbLoadSize()

	// Creates as Orb's clients make them (anchorOrigin: the domain that anchors the DID), posted
	// four at a time; a poller notes when each resolves, published, at anchord and at Orb.
	w := wallet.New(wallet.Config{Profile: sidetree.Profile{Method: "orb"}, AnchorOrigin: "http://127.0.0.2"})
	type tracked struct {
		id       *wallet.Identity
		accepted time.Time
		resolved time.Duration // at Orb
		here     time.Duration // at anchord
	}
	var mu sync.Mutex
	var dids []*tracked
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			mu.Lock()
			pending := slices.DeleteFunc(slices.Clone(dids), func(x *tracked) bool { return x.resolved != 0 })
			mu.Unlock()
			// Eight at a time, so that a pass over the pending DIDs is short next to the
			// latency it measures.
			var pass sync.WaitGroup
			sem := make(chan struct{}, 8)
			for _, x := range pending {
				sem <- struct{}{}
				pass.Go(func() {
					defer func() { <-sem }()
					mu.Lock()
					here := x.here
					mu.Unlock()
					if here == 0 && d.resolve(x.id.DID()).published {
						mu.Lock()
						x.here = time.Since(x.accepted)
						mu.Unlock()
					}
					if r := resolveAtOrb(t, "did:orb:uAAA:"+x.id.Suffix); r.status == http.StatusOK && r.published {
						mu.Lock()
						x.resolved = time.Since(x.accepted)
						mu.Unlock()
					}
				})
			}
			pass.Wait()
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	jobs := make(chan struct{}, nCreates)
	for range nCreates {
		jobs <- struct{}{}
	}
	close(jobs)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range jobs {
				id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				code, body, err := d.api.post(req)
				if err != nil || code != http.StatusOK {
					t.Errorf("create at anchord: %d %s %v", code, body, err)
					return
				}
				mu.Lock()
				dids = append(dids, &tracked{id: id, accepted: time.Now()})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())

	// Updates of the first DIDs, each posted as soon as its create is anchored at anchord: an
	// update's anchor may then follow its create's within the same second, which Orb (ordering
	// a DID's operations by the whole second of their anchor's credential) would ignore without
	// a word, were anchord's did:orb anchors not a second apart.
	for _, x := range dids[:nUpdates] {
		anchordtest.Eventually(t, time.Minute, 10*time.Millisecond, func() bool { return d.resolve(x.id.DID()).published },
			"the create of %s is anchored at anchord", x.id.Suffix)
		req, err := w.Update(x.id, wallet.AddServices(wallet.Service{ID: "u0", Type: "LinkedDomains", Endpoint: "https://example.org"}))
		require.NoError(t, err)
		// Accepted at once: a DID whose create resolves as published is no longer reserved
		// (intake waits for a holder whose index commit is under way).
		code, body, err := d.api.post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "the update of %s: %s", x.id.Suffix, body)
	}
	all := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !slices.ContainsFunc(dids, func(x *tracked) bool { return x.resolved == 0 })
	}
	anchordtest.Eventually(t, 2*time.Minute, 100*time.Millisecond, all, "every DID created at anchord resolves at Orb, published")
	close(done)
	<-polled
	atOrb, atAnchord := make([]time.Duration, 0, len(dids)), make([]time.Duration, 0, len(dids))
	for _, x := range dids {
		atOrb = append(atOrb, x.resolved)
		if x.here != 0 { // a DID published at anchord and at Orb within one pass
			atAnchord = append(atAnchord, x.here)
		}
	}
	slices.Sort(atOrb)
	slices.Sort(atAnchord)
	figures := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "none"
		}
		return fmt.Sprintf("p50 %s, p95 %s, max %s (%d DIDs)", quantile(ds, 0.5).Round(time.Millisecond),
			quantile(ds, 0.95).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
	}
	t.Logf("accept→resolvable of anchord's DIDs: at Orb %s; at anchord %s", figures(atOrb), figures(atAnchord))

	anchordtest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		for _, x := range dids[:nUpdates] {
			r := resolveAtOrb(t, "did:orb:uAAA:"+x.id.Suffix)
			if b, _ := json.Marshal(r.document); !strings.Contains(string(b), "https://example.org") {
				return false
			}
		}
		return true
	}, "the updates resolve at Orb")

	// Every DID: the same document at Orb as at anchord, and the canonical ID of anchord's
	// latest anchor of it.
	canonical := orbCanonicalIDs(t, d)
	for _, x := range dids {
		code, body, err := d.api.resolve(x.id.DID())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		var ours struct {
			Document map[string]any `json:"didDocument"`
			Meta     struct {
				CanonicalID string `json:"canonicalId"`
			} `json:"didDocumentMetadata"`
		}
		require.NoError(t, json.Unmarshal(body, &ours))
		theirs := resolveAtOrb(t, "did:orb:uAAA:"+x.id.Suffix)
		require.True(t, theirs.published, x.id.Suffix)
		require.Equal(t, withoutID(t, ours.Document), withoutID(t, theirs.document), "%s: Orb's document is anchord's", x.id.Suffix)
		require.Equal(t, canonical[x.id.Suffix], theirs.canonical, "%s: Orb's canonical ID is of anchord's anchor", x.id.Suffix)
		if strings.Count(ours.Meta.CanonicalID, ":") == 3 {
			// anchord names its did:orb DIDs as Orb does (did:orb:<anchor hash>:<suffix>).
			require.Equal(t, ours.Meta.CanonicalID, theirs.canonical, x.id.Suffix)
		}
		// Orb resolves the canonical form too.
		require.Equal(t, http.StatusOK, resolveAtOrb(t, theirs.canonical).status, theirs.canonical)
	}

	// On the wire, no two of anchord's anchors carry an issuanceDate in one whole second.
	seconds := map[int64]int{}
	for _, raw := range d.outboxCreateActivities() {
		a, err := activity.Parse(raw)
		require.NoError(t, err)
		content, err := a.Object.AnchorEvent.Object.Link().Replies[0].Content(vc.MaxDocumentSize)
		require.NoError(t, err)
		cred, err := vc.ParseCredential(content)
		require.NoError(t, err)
		seconds[cred.IssuanceDate().Unix()]++
	}
	for sec, n := range seconds {
		require.Equal(t, 1, n, "anchors issued in second %d", sec)
	}
	t.Logf("%d anchors, each issued in a second of its own", len(seconds))
	require.Empty(t, orb.problemsSince(mark), "Orb logged no warning or error while it followed anchord")

	// anchord's activity sync reads the inbox of Orb, its follower, which refuses it (Orb shows
	// its inbox only to its followers and witnesses, and anchord does not follow Orb): anchord
	// says so once and leaves that inbox alone for the runs after, where it used to ask, and
	// warn, at every run.
	refused := func() float64 { return d.api.metricTotal(t, `anchord_federation_sync_refused_total{source="inbox"}`) }
	syncRuns := func() float64 {
		return d.api.metricTotal(t, `anchord_taskmgr_runs_total{result="ok",task="activity-sync"}`)
	}
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool { return refused() >= 1 }, "anchord's sync asked Orb's inbox")
	runs := syncRuns()
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool { return syncRuns() >= runs+2 }, "two more sync runs")
	// The backoff starts at a minute and doubles; on a busy machine this test can outlast the
	// first one, so each minute since the start allows one more ask, never one per run.
	asks := 1 + math.Floor(time.Since(began).Minutes())
	require.LessOrEqual(t, refused(), asks, "Orb's inbox was left alone after its refusal")
	require.Less(t, refused(), syncRuns(), "not asked at every run")
	log := d.process().Log()
	require.LessOrEqual(t, float64(strings.Count(log, "activity sync source refuses to be read")), asks, "said once per backoff")
	require.NotContains(t, log, "activity sync source failed")
}

// TestAnchordWitnessesOrb: a real Orb domain invites an anchord domain (did:orb profile) to
// witness its anchors, as `orb-cli witness` does. anchord accepts (Orb is on its accept list),
// so anchord is Orb's only system witness, and Orb's default policy (every batch and every
// system witness) completes an anchor only with anchord's proof: a DID created at Orb is
// published, Orb logs the policy satisfied, and the credential Orb publishes carries
// anchord's proof, which verifies against anchord's did:web, beside Orb's own.
func TestAnchordWitnessesOrb(t *testing.T) {
	orb := startOrb(t)
	d := startOrbPeer(t, "anchord")
	require.Contains(t, d.admin("acceptlist", "add", "--type", "invite-witness", orbActor), orbActor)
	invite := fmt.Sprintf(`{"@context":["https://www.w3.org/ns/activitystreams","https://w3id.org/activityanchors/v1"],"type":"Invite","actor":%q,"to":%q,"object":"https://w3id.org/activityanchors#AnchorWitness","target":%q}`, orbActor, d.actor, d.actor)
	code, body := orbRequest(t, http.MethodPost, "/services/orb/outbox", []byte(invite))
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return strings.Contains(d.admin("witnessing", "list"), orbActor+"  accepted")
	}, "anchord accepted Orb's invitation")
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		code, body := orbRequest(t, http.MethodGet, "/services/orb/witnesses?page=true", nil)
		return code == http.StatusOK && strings.Contains(string(body), d.actor)
	}, "Orb lists anchord among its witnesses")
	mark := orb.mark()

	create := orbCreate(t)
	op, err := sidetree.ParseOperation(create, sidetree.DefaultProfile())
	require.NoError(t, err)
	resp, err := http.Post("http://"+orbAddr+"/sidetree/v1/operations", "application/json", bytes.NewReader(create))
	require.NoError(t, err)
	created, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(created))
	start := time.Now()
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return resolveAtOrb(t, "did:orb:uAAA:"+op.Suffix).published
	}, "Orb publishes its DID once anchord's proof satisfies its witness policy")
	t.Logf("Orb's DID published %s after its create, witnessed by anchord", time.Since(start).Round(time.Millisecond))
	require.True(t, orb.logged(mark, "Witness policy has been satisfied"))
	// Counted once the Accept's transaction has committed, which is also when its delivery
	// starts: Orb can publish before the count moves.
	anchordtest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		return d.api.metric(t, `anchord_witness_offers_received_total{outcome="signed"}`) > 0
	}, "anchord signed Orb's offer")

	// The credential of Orb's anchor, from Orb's public outbox: Orb's proof and anchord's.
	var found *vc.Credential
	for page := 0; found == nil; page++ {
		code, body := orbRequest(t, http.MethodGet, fmt.Sprintf("/services/orb/outbox?page=true&page-num=%d", page), nil)
		require.Equal(t, http.StatusOK, code, string(body))
		var p struct {
			Items []json.RawMessage `json:"orderedItems"`
		}
		require.NoError(t, json.Unmarshal(body, &p))
		require.NotEmpty(t, p.Items, "Orb's outbox has the Create of its anchor")
		for _, raw := range creates(t, p.Items) {
			a, err := activity.Parse(raw)
			require.NoError(t, err)
			link := a.Object.AnchorEvent.Object.Link()
			content, err := link.AnchorContent()
			require.NoError(t, err)
			if !slices.ContainsFunc(content.Operations, func(o activity.SuffixAnchor) bool { return o.Suffix == op.Suffix }) {
				continue
			}
			replies, err := link.Replies[0].Content(vc.MaxDocumentSize)
			require.NoError(t, err)
			found, err = vc.ParseCredential(replies)
			require.NoError(t, err)
		}
	}
	signers := verifiedSigners(t, found)
	require.Contains(t, signers, "did:web:127.0.0.2", "anchord's proof verifies")
	require.Contains(t, signers, "did:web:127.0.0.1", "Orb's own proof verifies")
}
