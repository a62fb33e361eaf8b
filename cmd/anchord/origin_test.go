package main

// Resolution from a DID's anchor origin (--resolve-from-anchor-origin) between anchord domains
// in the did:orb profile, and against an origin that lies.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// originFlags make a domain an anchor origin other domains can resolve from, as Orb's are:
// accepted creates and updates show before they are anchored, and the resolution metadata lists
// the DID's operations.
var originFlags = []string{
	"--did-method", "orb", "--enable-unpublished-operation-store",
	"--include-unpublished-operations-in-metadata", "--include-published-operations-in-metadata",
}

// heldBack makes a domain anchor only pairs of operations (the batch writer's timeout is ten
// minutes): an operation posted alone stays accepted and unanchored until a second one comes.
var heldBack = []string{"--max-operation-count", "2", "--batch-writer-timeout", "10m"}

// originDIDs creates two DIDs at a (one anchor of two operations) and waits until each resolves
// canonically at every domain in at. It returns the identities and their canonical names.
func originDIDs(t *testing.T, a *relayDomain, w *wallet.Wallet, at ...*relayDomain) ([]*wallet.Identity, []string) {
	t.Helper()
	var ids []*wallet.Identity
	for range 2 {
		id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
		require.NoError(t, err)
		code, body, err := a.api.post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		ids = append(ids, id)
	}
	var names []string
	for _, id := range ids {
		var r orbResult
		anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			r = resolveOrb(t, a, "did:orb:uAAA:"+id.Suffix)
			return r.status == http.StatusOK && r.published && r.canonical != ""
		}, "A names %s canonically", id.Suffix)
		names = append(names, r.canonical)
		for _, d := range at {
			anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
				got := resolveOrb(t, d, r.canonical)
				return got.status == http.StatusOK && got.canonical == r.canonical
			}, "%s holds %s", d.name, id.Suffix)
		}
	}
	return ids, names
}

// postUpdate posts an update of id adding a service named svc.
func postUpdate(t *testing.T, d *relayDomain, w *wallet.Wallet, id *wallet.Identity, svc string) {
	t.Helper()
	req, err := w.Update(id, wallet.AddServices(wallet.Service{ID: svc, Type: "LinkedDomains", Endpoint: "https://example.org/" + svc}))
	require.NoError(t, err)
	code, body, err := d.api.post(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
}

// unpublishedListed returns how many unpublished operations d's resolution of did lists.
func unpublishedListed(t *testing.T, d *relayDomain, did string) int {
	t.Helper()
	code, body, err := d.api.resolve(did)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	var r struct {
		Meta struct {
			Method struct {
				Unpublished []json.RawMessage `json:"unpublishedOperations"`
			} `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	require.NoError(t, json.Unmarshal(body, &r))
	return len(r.Meta.Method.Unpublished)
}

// TestResolveFromAnchorOrigin: A anchors DIDs in the did:orb profile and lists their operations;
// B and C follow A, B with --resolve-from-anchor-origin. An update A accepted and has not
// anchored shows at A and at B, not at C. D follows nobody and found a DID through DID
// discovery: updates A anchored never reach it, yet with the flag D answers them, from A's
// published operations. Once the updates are anchored and delivered, B and C answer alike.
func TestResolveFromAnchorOrigin(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", append(originFlags, heldBack...)...)
	b := startDomain(t, "B", "--did-method", "orb", "--resolve-from-anchor-origin")
	c := startDomain(t, "C", "--did-method", "orb")
	d := startDomainEnv(t, "D", []string{"DID_DISCOVERY_ENABLED=true", "RESOLVE_FROM_ANCHOR_ORIGIN=true"}, "--did-method", "orb")
	b.follow(a)
	c.follow(a)

	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://" + a.addr})
	ids, names := originDIDs(t, a, w, b, c)
	hint := "did:orb:http:" + a.addr + ":" + strings.TrimPrefix(names[0], "did:orb:") // the domain hint D discovers by
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return resolveOrb(t, d, hint).status == http.StatusOK
	}, "D discovers %s", hint)

	postUpdate(t, a, w, ids[0], "pending")
	atA := resolveOrb(t, a, names[0])
	require.Contains(t, atA.document, "#pending", "A shows the update it accepted")
	require.Empty(t, atA.version, "which no anchor holds yet: no versionId, as at Orb")
	require.Equal(t, 1, unpublishedListed(t, a, names[0]))
	atB := resolveOrb(t, b, names[0])
	require.Equal(t, atA, atB, "B answers what A answers")
	require.NotContains(t, resolveOrb(t, c, names[0]).document, "#pending", "C, without the flag, waits for the anchor")
	require.InDelta(t, 1, b.api.metric(t, `anchord_origin_resolutions_total{outcome="merged"}`), 0)
	uAAA := resolveOrb(t, b, "did:orb:uAAA:"+ids[0].Suffix)
	require.NotContains(t, uAAA.document, "#pending", "Orb asks no origin about the uAAA name")

	// A second update fills A's batch: both are anchored and delivered to B and C, not to D.
	postUpdate(t, a, w, ids[1], "second")
	for _, dom := range []*relayDomain{b, c} {
		anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
			r := resolveOrb(t, dom, names[1])
			return strings.Contains(r.document, "#second") && r.version != ""
		}, "the updates reach %s", dom.name)
	}
	for _, name := range names {
		want := resolveOrb(t, a, name)
		require.NotEmpty(t, want.version)
		require.Equal(t, want, resolveOrb(t, b, name), "B answers %s as A does", name)
		require.Equal(t, want, resolveOrb(t, c, name), "C too, now")
		require.Zero(t, unpublishedListed(t, a, name), "A's store forgot the anchored updates")
	}
	require.Positive(t, b.api.metric(t, `anchord_origin_resolutions_total{outcome="current"}`), "B asked A and had nothing to add")

	// D holds the create only; A's published operations after it are the update, which D
	// merges (its version is A's anchor of it).
	got := resolveOrb(t, d, hint)
	require.Contains(t, got.document, "#pending")
	require.Equal(t, resolveOrb(t, a, hint), got)
	require.Positive(t, d.api.metric(t, `anchord_origin_resolutions_total{outcome="merged"}`))
	d.stop()
	require.Len(t, d.indexRows([]string{ids[0].Suffix})[ids[0].Suffix], 1, "D holds the create only")
}

// standIn is an anchor origin between B and A: it answers Orb's discovery with its own
// endpoints and each resolution with A's answer, which a test may falsify or hold back.
type standIn struct {
	srv   *httptest.Server
	to    string // A's base URL
	mu    sync.Mutex
	lie   func(map[string]any)
	delay time.Duration
}

func startStandIn(t *testing.T, to string) *standIn {
	t.Helper()
	s := &standIn{to: to}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *standIn) set(lie func(map[string]any), delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lie, s.delay = lie, delay
}

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	lie, delay := s.lie, s.delay
	s.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	endpoint := s.srv.URL + "/sidetree/v1/identifiers"
	switch {
	case r.URL.Path == "/.well-known/did-orb":
		_ = json.NewEncoder(w).Encode(map[string]string{"resolutionEndpoint": endpoint, "operationEndpoint": s.srv.URL + "/sidetree/v1/operations"})
	case r.URL.Path == "/.well-known/webfinger" && r.URL.Query().Get("resource") == endpoint:
		_ = json.NewEncoder(w).Encode(map[string]any{"subject": endpoint, "properties": map[string]any{"https://trustbloc.dev/ns/min-resolvers": 1},
			"links": []any{map[string]string{"rel": "self", "href": endpoint}}})
	case strings.HasPrefix(r.URL.Path, "/sidetree/v1/identifiers/"):
		resp, err := http.Get(s.to + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && lie != nil {
			var v map[string]any
			if json.Unmarshal(body, &v) == nil {
				lie(v)
				body, _ = json.Marshal(v)
			}
		}
		w.Header().Set("Content-Type", "application/did+ld+json")
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(body)
	default:
		http.NotFound(w, r)
	}
}

// TestALyingAnchorOriginIsIgnored: the DIDs name a stand-in as their anchor origin; A anchors
// them (it allows any origin), B follows A and resolves from the origin. Told A's answers, B
// merges A's pending update; told a different document, update commitment or canonicalId, B
// answers with what it holds, logs the refusal and counts it. A stand-in that does not answer
// costs B's resolution at most the origin timeout, and is then not asked for a while.
func TestALyingAnchorOriginIsIgnored(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", append(append(originFlags, heldBack...), "--allowed-origins", "*")...)
	s := startStandIn(t, "http://"+a.addr)
	b := startDomain(t, "B", "--did-method", "orb", "--resolve-from-anchor-origin")
	b.follow(a)
	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: s.srv.URL})
	ids, names := originDIDs(t, a, w, b)
	postUpdate(t, a, w, ids[0], "pending")

	honest := resolveOrb(t, b, names[0])
	require.Contains(t, honest.document, "#pending", "the stand-in tells A's answer")
	require.Equal(t, resolveOrb(t, a, names[0]), honest)

	meta := func(v map[string]any) map[string]any { return v["didDocumentMetadata"].(map[string]any) }
	for _, lie := range []struct {
		what string
		lie  func(map[string]any)
	}{
		{"document", func(v map[string]any) {
			doc := v["didDocument"].(map[string]any)
			doc["service"] = append(doc["service"].([]any), map[string]any{"id": names[0] + "#injected", "type": "LinkedDomains", "serviceEndpoint": "https://evil.example"})
		}},
		{"updateCommitment", func(v map[string]any) {
			meta(v)["method"].(map[string]any)["updateCommitment"] = "EiDnotTheCommitmentOfTheUpdate00000000000000000"
		}},
		{"canonicalId", func(v map[string]any) {
			meta(v)["canonicalId"] = "did:orb:uEiBw7XfdbDLHZ8yBT9lBDXUVmKzmY7UvKpGfnCjhxM0U7Q:" + ids[0].Suffix
		}},
	} {
		s.set(lie.lie, 0)
		mismatches := b.api.metricTotal(t, "anchord_origin_resolutions_total{outcome=\"mismatch\"}")
		got := resolveOrb(t, b, names[0])
		require.NotContains(t, got.document, "#pending", "a different %s: B answers with what it holds", lie.what)
		require.NotContains(t, got.document, "#injected")
		require.Equal(t, names[0], got.canonical, lie.what)
		require.InDelta(t, mismatches+1, b.api.metricTotal(t, "anchord_origin_resolutions_total{outcome=\"mismatch\"}"), 0, lie.what)
	}
	var refusals []string
	for _, l := range b.logLines("WARN") {
		if strings.Contains(l, "anchor origin's answer ignored") {
			refusals = append(refusals, l)
		}
	}
	require.Len(t, refusals, 3, "each refusal logged, naming what differs: %v", refusals)
	for i, what := range []string{"document", "updateCommitment", "canonicalId"} {
		require.Contains(t, refusals[i], "differs="+what)
	}

	// Silent: the local answer comes within the origin timeout (2 s), and the next without
	// asking.
	s.set(nil, time.Minute)
	start := time.Now()
	slow := resolveOrb(t, b, names[0])
	took := time.Since(start)
	require.NotContains(t, slow.document, "#pending")
	require.Less(t, took, 10*time.Second, "bounded by the origin timeout")
	t.Logf("resolution at B with a silent anchor origin: %s", took.Round(time.Millisecond))
	start = time.Now()
	require.Equal(t, slow, resolveOrb(t, b, names[0]))
	require.Less(t, time.Since(start), 2*time.Second, "a failed origin is not asked again at once")
	require.InDelta(t, 1, b.api.metric(t, `anchord_origin_resolutions_total{outcome="unreachable"}`), 0)
	require.InDelta(t, 1, b.api.metric(t, `anchord_origin_resolutions_total{outcome="skipped"}`), 0)
}

// TestClusterForgetsParkedUnpublishedOperations: in a cluster as in one process, a create whose
// batches failed until it was parked stops showing from the unpublished operation store of the
// instance that parked it, instead of for the store's TTL (ten minutes): it will not be
// anchored.
func TestClusterForgetsParkedUnpublishedOperations(t *testing.T) {
	t.Parallel()
	c := newCluster(t, [][]string{{"ANCHORD_FAILPOINTS=batch-fail=1000000"}},
		"--did-method", "orb", "--enable-unpublished-operation-store", "--mq-redelivery-max-attempts", "1")
	node := c.nodes[0]
	api := newClient(node.addr)
	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://" + node.addr})
	id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	code, body, err := api.post(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return api.metricTotal(t, "anchord_opqueue_dead_lettered_total") == 1
	}, "the create is parked")
	code, body, err = api.resolve("did:orb:uAAA:" + id.Suffix)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "a parked create does not resolve: %s", body)
}
