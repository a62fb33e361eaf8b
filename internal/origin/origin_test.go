package origin

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store/storetest"
)

const actorA = "http://a.example/services/anchord"

// testBundle is a DID anchored by domain A, held by A and by this domain B; A has an update of
// it accepted and not anchored. A's answers come from a real resolver configured as an anchord
// origin, served by a stand-in whose answers a test may falsify.
type testBundle struct {
	origin    *httptest.Server
	a         *observer.Resolver
	b         *observer.Resolver
	r         *Resolver
	fetch     FetchFunc // through the outbound guard
	reg       *prometheus.Registry
	canonical string
	update    *sidetree.Operation

	// tamper, if set, rewrites A's answer to a resolution; delay holds every answer.
	mu     sync.Mutex
	tamper func(map[string]any)
	status int
	delay  time.Duration
	asked  atomic.Int64

	// discoveries counts the requests for /.well-known/did-orb; while hold is set, each waits
	// for it to close, after telling held.
	discoveries atomic.Int64
	hold        chan struct{}
	held        chan struct{}
}

func (b *testBundle) set(tamper func(map[string]any), status int, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tamper, b.status, b.delay = tamper, status, delay
}

func setup(t testing.TB, timeout time.Duration) *testBundle {
	t.Helper()
	ctx := context.Background()
	b := &testBundle{reg: prometheus.NewRegistry()}
	b.origin = httptest.NewServer(http.HandlerFunc(b.serveOrigin))
	t.Cleanup(b.origin.Close)

	p := sidetree.OrbProfile("http:" + strings.TrimPrefix(b.origin.URL, "http://"))
	w := wallet.New(wallet.Config{AnchorOrigin: b.origin.URL})
	id, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	createOp, err := sidetree.ParseOperation(create, sidetree.DefaultProfile())
	require.NoError(t, err)
	req, err := w.Update(id, wallet.AddServices(wallet.Service{ID: "pending", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	b.update, err = sidetree.ParseOperation(req, sidetree.DefaultProfile())
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("A's anchor of the create"))
	hash := "u" + base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, sum[:]...))
	b.canonical = "did:orb:" + hash + ":" + id.Suffix

	// Both domains hold the create, anchored by A.
	held := func() *observer.Resolver {
		st := storetest.Open(t, storetest.SQLiteOpener(t))
		// A's batch files are stored here, as the relay stores another domain's: the index
		// keeps no request, and a history is read back from them.
		cs, err := cas.NewStore(cas.StoreConfig{}, st)
		require.NoError(t, err)
		files, err := batchfile.Build([]*sidetree.Operation{createOp}, cs.Address, batchfile.DefaultLimits())
		require.NoError(t, err)
		for _, f := range files.List() {
			require.NoError(t, cs.PutAddressed(ctx, f.URI, f.Data))
		}
		r := observer.NewResolver(p, st, nil, 0)
		o, err := observer.New(observer.Config{Profile: sidetree.DefaultProfile(), Resolver: r, Logger: anchordtest.Logger(t)}, st, cs.FetchFunc)
		require.NoError(t, err)
		_, err = o.ObserveForeign(ctx, observer.ForeignAnchor{
			AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, Origin: actorA, Hashlink: "hl:" + hash,
			Operations: []sidetree.AnchoredOperation{{Type: createOp.Type, Suffix: createOp.Suffix, Request: createOp.Request}},
		}, nil)
		require.NoError(t, err)
		return r
	}
	b.a, b.b = held(), held()
	pending := observer.NewUnpublished(time.Hour, 0)
	pending.Add(b.update, "update", b.origin.URL)
	b.a.SetOrbOperations(observer.OrbOperations{Unpublished: pending, IncludeUnpublished: true, IncludePublished: true})

	allowed, err := egress.ParseAllowed("127.0.0.0/8")
	require.NoError(t, err)
	guard, err := egress.New(egress.Config{Allowed: allowed})
	require.NoError(t, err)
	t.Cleanup(guard.CloseIdleConnections)
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	client, err := peer.New(peer.Config{KeyID: "http://b.example/services/anchord/keys/main-key", PrivateKey: key, HTTP: guard.Client()},
		storetest.Open(t, storetest.SQLiteOpener(t)))
	require.NoError(t, err)
	t.Cleanup(client.Close)
	b.fetch = client.Fetch
	b.r, err = New(Config{Self: "http://b.example", Timeout: timeout, Logger: anchordtest.Logger(t), Registerer: b.reg}, b.b, client.Fetch)
	require.NoError(t, err)
	return b
}

// serveOrigin is A as an anchord origin serves it (federation's /.well-known/did-orb and
// WebFinger, the Sidetree path), with the test's falsifications.
func (b *testBundle) serveOrigin(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	tamper, status, delay, hold := b.tamper, b.status, b.delay, b.hold
	b.mu.Unlock()
	if r.URL.Path == "/.well-known/did-orb" {
		b.discoveries.Add(1)
		if hold != nil {
			b.held <- struct{}{}
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	endpoint := b.origin.URL + "/sidetree/v1/identifiers"
	switch {
	case r.URL.Path == "/.well-known/did-orb":
		_ = json.NewEncoder(w).Encode(map[string]string{"resolutionEndpoint": endpoint, "operationEndpoint": b.origin.URL + "/sidetree/v1/operations"})
	case r.URL.Path == "/.well-known/webfinger" && r.URL.Query().Get("resource") == endpoint:
		_ = json.NewEncoder(w).Encode(map[string]any{"subject": endpoint, "properties": map[string]any{"https://trustbloc.dev/ns/min-resolvers": 1},
			"links": []any{map[string]string{"rel": "self", "href": endpoint}, map[string]string{"rel": "alternate", "href": "http://127.0.0.9:1/sidetree/v1/identifiers"}}})
	case strings.HasPrefix(r.URL.Path, "/sidetree/v1/identifiers/"):
		b.asked.Add(1)
		body, status, err := b.a.Resolve(r.Context(), strings.TrimPrefix(r.URL.Path, "/sidetree/v1/identifiers/"))
		if err != nil || status == sidetree.ResolutionNotFound {
			http.NotFound(w, r)
			return
		}
		if tamper != nil {
			var v map[string]any
			if json.Unmarshal(body, &v) == nil {
				tamper(v)
				body, _ = json.Marshal(v)
			}
		}
		w.Header().Set("Content-Type", "application/did+ld+json")
		_, _ = w.Write(body)
	default:
		http.NotFound(w, r)
	}
}

func (b *testBundle) resolve(t *testing.T, did string) (services []string, meta map[string]any) {
	t.Helper()
	body, status, err := b.r.Resolve(context.Background(), did)
	require.NoError(t, err)
	require.Equal(t, sidetree.ResolutionFound, status)
	var res struct {
		Document struct {
			Service []struct {
				ID string `json:"id"`
			} `json:"service"`
		} `json:"didDocument"`
		Meta map[string]any `json:"didDocumentMetadata"`
	}
	require.NoError(t, json.Unmarshal(body, &res), string(body))
	for _, s := range res.Document.Service {
		services = append(services, s.ID[strings.LastIndexByte(s.ID, '#')+1:])
	}
	return services, res.Meta
}

func (b *testBundle) outcome(name string) float64 {
	return testutil.ToFloat64(b.r.m.resolutions.WithLabelValues(name))
}

// TestMergesWhatTheOriginHas: B answers with A's pending update, whose document, commitments,
// origin and canonicalId A's answer confirms; the uAAA name and a version are answered locally;
// once the origin has nothing B lacks, B's own answer stands.
func TestMergesWhatTheOriginHas(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	services, meta := b.resolve(t, b.canonical)
	require.Equal(t, []string{"home", "pending"}, services)
	require.Equal(t, b.update.Delta.UpdateCommitment, meta["method"].(map[string]any)["updateCommitment"])
	require.Equal(t, b.canonical, meta["canonicalId"])
	require.InDelta(t, 1, b.outcome(outcomeMerged), 0)

	body, _, err := b.r.ResolveVersion(context.Background(), b.canonical, "", time.Time{})
	require.NoError(t, err)
	require.Contains(t, string(body), "#pending", "the latest version through the other path too")
	asked := b.asked.Load()
	for _, did := range []string{"did:orb:uAAA:" + b.canonical[strings.LastIndexByte(b.canonical, ':')+1:]} {
		services, _ = b.resolve(t, did)
		require.Equal(t, []string{"home"}, services, "Orb asks no origin about an unpublished name")
	}
	require.Equal(t, asked, b.asked.Load())
	self, err := New(Config{Self: b.origin.URL + "/services/anchord", Registerer: prometheus.NewRegistry()}, b.b, func(context.Context, string, int64) ([]byte, error) {
		t.Fatal("a domain does not ask itself")
		return nil, nil
	})
	require.NoError(t, err)
	body, _, err = self.Resolve(context.Background(), b.canonical)
	require.NoError(t, err)
	require.NotContains(t, string(body), "#pending")

	// A's answer without the update (it reached B, or A lost it): nothing to merge.
	b.a.SetOrbOperations(observer.OrbOperations{IncludePublished: true})
	services, _ = b.resolve(t, b.canonical)
	require.Equal(t, []string{"home"}, services)
	require.InDelta(t, 1, b.outcome(outcomeCurrent), 0)
}

// TestALyingOriginIsIgnored: an answer that names another document, other commitments, another
// canonicalId or another anchor origin than the merge gives, or that is no resolution result,
// is ignored: the local result is the answer, and the outcome is counted.
func TestALyingOriginIsIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	method := func(v map[string]any) map[string]any {
		return v["didDocumentMetadata"].(map[string]any)["method"].(map[string]any)
	}
	for _, tc := range []struct {
		name    string
		tamper  func(map[string]any)
		outcome string
	}{
		{"document", func(v map[string]any) {
			doc := v["didDocument"].(map[string]any)
			doc["service"] = append(doc["service"].([]any), map[string]any{"id": "#injected", "type": "LinkedDomains", "serviceEndpoint": "https://evil.example"})
		}, outcomeMismatch},
		{"updateCommitment", func(v map[string]any) { method(v)["updateCommitment"] = "EiAnotherCommitment" }, outcomeMismatch},
		{"recoveryCommitment", func(v map[string]any) { delete(method(v), "recoveryCommitment") }, outcomeMismatch},
		{"canonicalId", func(v map[string]any) {
			v["didDocumentMetadata"].(map[string]any)["canonicalId"] = "did:orb:uEiAnother:" + b.update.Suffix
		}, outcomeMismatch},
		{"anchorOrigin", func(v map[string]any) { method(v)["anchorOrigin"] = "https://elsewhere.example" }, outcomeMismatch},
		{"not a result", func(v map[string]any) { v["didDocumentMetadata"] = "nothing" }, outcomeInvalid},
		{"a published operation without its anchor", func(v map[string]any) {
			method(v)["publishedOperations"] = []any{map[string]any{"type": "update", "operation": "e30="}}
		}, outcomeInvalid},
	} {
		b.set(tc.tamper, 0, 0)
		before := b.outcome(tc.outcome)
		services, meta := b.resolve(t, b.canonical)
		require.Equal(t, []string{"home"}, services, tc.name)
		require.Equal(t, b.canonical, meta["canonicalId"], tc.name)
		require.InDelta(t, before+1, b.outcome(tc.outcome), 0, tc.name)
	}
	b.set(nil, 0, 0)
	services, _ := b.resolve(t, b.canonical)
	require.Equal(t, []string{"home", "pending"}, services, "an honest answer is merged again")
}

// TestAFailingOriginCostsAtMostTheTimeout: an origin that does not answer in time, or fails,
// leaves the local answer within the timeout, and is not asked again for a while; one that
// does not know the name is asked again.
func TestAFailingOriginCostsAtMostTheTimeout(t *testing.T) {
	t.Parallel()
	// Long enough for an honest answer on a busy machine (300 ms was not, at load average 25).
	const timeout = 3 * time.Second
	b := setup(t, timeout)
	now := time.Now()
	b.r.cfg.NowFunc = func() time.Time { return now }

	b.set(nil, 0, time.Minute)
	start := time.Now()
	services, _ := b.resolve(t, b.canonical)
	took := time.Since(start)
	require.Equal(t, []string{"home"}, services)
	require.Less(t, took, timeout+2*time.Second, "bounded by the timeout (and the local resolution)")
	require.InDelta(t, 1, b.outcome(outcomeUnreachable), 0)

	start = time.Now()
	services, _ = b.resolve(t, b.canonical)
	require.Equal(t, []string{"home"}, services)
	require.InDelta(t, 1, b.outcome(outcomeSkipped), 0, "a failed origin is not asked again at once")
	require.Less(t, time.Since(start), timeout, "and costs nothing")

	now = now.Add(FailureTTLDefault)
	b.set(nil, http.StatusInternalServerError, 0)
	services, _ = b.resolve(t, b.canonical)
	require.Equal(t, []string{"home"}, services)
	require.InDelta(t, 2, b.outcome(outcomeUnreachable), 0)

	now = now.Add(FailureTTLDefault)
	b.set(nil, 0, 0)
	services, _ = b.resolve(t, b.canonical)
	require.Equal(t, []string{"home", "pending"}, services, "asked again after the failure lapsed")

	// The origin's endpoints are remembered: a 404 on the resolution comes from the endpoint.
	b.set(nil, http.StatusNotFound, 0)
	services, _ = b.resolve(t, b.canonical)
	require.Equal(t, []string{"home"}, services)
	require.InDelta(t, 1, b.outcome(outcomeUnknown), 0)
	b.set(nil, 0, 0)
	services, _ = b.resolve(t, b.canonical)
	require.Equal(t, []string{"home", "pending"}, services, "a name the origin did not know is no failure")
}

// TestAnOriginWithoutEndpointsIsRemembered: an origin that does not serve /.well-known/did-orb
// (not a did:orb domain) fails every resolution alike: it is asked once, not at every
// resolution.
func TestAnOriginWithoutEndpointsIsRemembered(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	b.set(nil, http.StatusNotFound, 0)
	for range 3 {
		services, _ := b.resolve(t, b.canonical)
		require.Equal(t, []string{"home"}, services)
	}
	require.InDelta(t, 1, b.outcome(outcomeUnreachable), 0)
	require.InDelta(t, 2, b.outcome(outcomeSkipped), 0)
	require.Zero(t, b.asked.Load())
}

// TestOriginsTheGuardRefusesAreNotReached: the origin is asked through the outbound guard, so
// an origin on an address the guard refuses is never reached, and the local answer stands.
func TestOriginsTheGuardRefusesAreNotReached(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	guard, err := egress.New(egress.Config{}) // public addresses only
	require.NoError(t, err)
	t.Cleanup(guard.CloseIdleConnections)
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	client, err := peer.New(peer.Config{KeyID: "http://b.example/k", PrivateKey: key, HTTP: guard.Client()}, storetest.Open(t, storetest.SQLiteOpener(t)))
	require.NoError(t, err)
	t.Cleanup(client.Close)
	r, err := New(Config{Self: "http://b.example", Registerer: prometheus.NewRegistry(), Logger: anchordtest.Logger(t)}, b.b, client.Fetch)
	require.NoError(t, err)
	body, status, err := r.Resolve(context.Background(), b.canonical)
	require.NoError(t, err)
	require.Equal(t, sidetree.ResolutionFound, status)
	require.NotContains(t, string(body), "#pending")
	require.Zero(t, b.asked.Load())
	require.InDelta(t, 1, testutil.ToFloat64(r.m.resolutions.WithLabelValues(outcomeUnreachable)), 0)
}

// TestAsksOnlyAboutDIDsAnchoredHere: a long-form name resolves here to its initial state,
// whose anchorOrigin is whatever its client wrote; with no anchored head there is nothing to
// merge, so no origin is asked (a client would otherwise make this domain send a request to
// any host it names, and fill the memory of origins).
func TestAsksOnlyAboutDIDsAnchoredHere(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	var asked atomic.Int64
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(elsewhere.Close)
	_, create, err := wallet.New(wallet.Config{AnchorOrigin: elsewhere.URL}).Create()
	require.NoError(t, err)
	op, err := sidetree.ParseOperation(create, sidetree.DefaultProfile())
	require.NoError(t, err)
	long, err := sidetree.LongFormDID(sidetree.OrbProfile("http:b.example"), op)
	require.NoError(t, err)
	require.NotContains(t, long, ":"+sidetree.OrbUnpublishedLabel+":")

	body, status, err := b.r.Resolve(context.Background(), long)
	require.NoError(t, err)
	require.Equal(t, sidetree.ResolutionFound, status)
	require.Contains(t, string(body), `"published":false`)
	require.Zero(t, asked.Load())
	require.Zero(t, testutil.CollectAndCount(b.r.m.resolutions))
}

// TestALookupOutlivesTheClientThatStartedIt: the lookup of an origin's endpoints serves every
// resolution that joins it, so the client that started it leaving does not end it: before, the
// lookup failed with that client's cancellation, and a resolution that had joined it took the
// origin for failing and did not ask it for a minute. The endpoints found are remembered.
func TestALookupOutlivesTheClientThatStartedIt(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	hold := make(chan struct{})
	b.mu.Lock()
	b.hold, b.held = hold, make(chan struct{}, 1)
	b.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		body, _, err := b.r.Resolve(ctx, b.canonical)
		if err == nil && strings.Contains(string(body), "#pending") {
			t.Error("a resolution whose client left answered from the origin")
		}
	}()
	<-b.held
	cancel()
	<-gone
	b.mu.Lock()
	b.hold = nil
	b.mu.Unlock()
	close(hold)

	services, _ := b.resolve(t, b.canonical)
	require.Equal(t, []string{"home", "pending"}, services)
	require.Equal(t, int64(1), b.discoveries.Load(), "the endpoints were found once")
	require.Zero(t, b.outcome(outcomeSkipped))
}

// TestResolutionsAskingAtOnceAreBounded: beyond MaxInFlight resolutions asking origins at once,
// a resolution is answered locally at once (and counted busy), whatever the number of clients
// asking about DIDs of other domains; the one in flight still merges.
func TestResolutionsAskingAtOnceAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	reg := prometheus.NewRegistry()
	r, err := New(Config{Self: "http://b.example", MaxInFlight: 1, Logger: anchordtest.Logger(t), Registerer: reg}, b.b, b.fetch)
	require.NoError(t, err)
	hold := make(chan struct{})
	b.mu.Lock()
	b.hold, b.held = hold, make(chan struct{}, 1)
	b.mu.Unlock()
	first := make(chan []byte, 1)
	go func() {
		body, _, err := r.Resolve(context.Background(), b.canonical)
		if err != nil {
			t.Error(err)
		}
		first <- body
	}()
	<-b.held // the first is asking the origin

	body, status, err := r.Resolve(context.Background(), b.canonical)
	require.NoError(t, err)
	require.Equal(t, sidetree.ResolutionFound, status)
	require.NotContains(t, string(body), "#pending", "answered locally")
	require.InDelta(t, 1, testutil.ToFloat64(r.m.resolutions.WithLabelValues(outcomeBusy)), 0)

	b.mu.Lock()
	b.hold = nil
	b.mu.Unlock()
	close(hold)
	require.Contains(t, string(<-first), "#pending")
	body, _, err = r.Resolve(context.Background(), b.canonical)
	require.NoError(t, err)
	require.Contains(t, string(body), "#pending", "the slot is given back")
}
