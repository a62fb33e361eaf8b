package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// orbResult is the part of a did:orb resolution result these tests compare.
type orbResult struct {
	status     int
	id         string
	document   string
	canonical  string
	equivalent []string
	version    string
	published  bool
}

func resolveOrb(t *testing.T, d *relayDomain, did string) orbResult {
	t.Helper()
	code, body, err := d.api.resolve(did)
	require.NoError(t, err)
	if code != http.StatusOK {
		return orbResult{status: code}
	}
	var r struct {
		Document json.RawMessage `json:"didDocument"`
		Meta     struct {
			Canonical  string   `json:"canonicalId"`
			Equivalent []string `json:"equivalentId"`
			Version    string   `json:"versionId"`
			Method     struct {
				Published bool `json:"published"`
			} `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	var doc struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(r.Document, &doc))
	// The document names the DID as asked; compare the rest.
	return orbResult{status: code, id: doc.ID, document: strings.ReplaceAll(string(r.Document), doc.ID, "<id>"),
		canonical: r.Meta.Canonical, equivalent: r.Meta.Equivalent, version: r.Meta.Version, published: r.Meta.Method.Published}
}

// TestOrbNamesAcrossDomains: two domains in the did:orb profile, B following A. A answers a
// create as Orb does (did:orb:uAAA:<suffix>, with its domain's name of it); once anchored, A
// names each DID did:orb:<anchor hash>:<suffix> with the hashlink name as equivalentId, and B
// resolves it under each of those names and the domain hint with the same document and the same
// canonicalId; an update moves versionId only, a recover moves the canonical name and the old one
// still resolves (an ancestor) to the new one, and a name with an anchor hash neither domain
// knows is not found.
func TestOrbNamesAcrossDomains(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", "--did-method", "orb")
	b := startDomainEnv(t, "B", []string{"DID_NAMESPACE=did:orb"})
	b.follow(a)

	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://" + a.addr})
	var ids []*wallet.Identity
	for range 5 {
		id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
		require.NoError(t, err)
		code, body, err := a.api.post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		var created struct {
			Document struct {
				ID string `json:"id"`
			} `json:"didDocument"`
			Meta struct {
				Equivalent []string `json:"equivalentId"`
			} `json:"didDocumentMetadata"`
		}
		require.NoError(t, json.Unmarshal(body, &created))
		require.Equal(t, "did:orb:uAAA:"+id.Suffix, created.Document.ID, "Orb's name before anchoring")
		require.Equal(t, []string{"did:orb:http:" + a.addr + ":uAAA:" + id.Suffix}, created.Meta.Equivalent)
		ids = append(ids, id)
	}

	// A request without anchorOrigin is refused as Orb refuses it.
	_, plain, err := wallet.New(wallet.Config{Profile: sidetree.OrbProfile("")}).Create()
	require.NoError(t, err)
	code, body, err := a.api.post(plain)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "bad request: anchor origin must be specified", string(body))

	canonical := func(d *relayDomain, id *wallet.Identity) orbResult {
		var r orbResult
		anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			r = resolveOrb(t, d, "did:orb:uAAA:"+id.Suffix)
			return r.status == http.StatusOK && r.published && r.canonical != ""
		}, "%s names %s canonically", d.name, id.Suffix)
		return r
	}
	for _, id := range ids {
		atA := canonical(a, id)
		require.Len(t, atA.equivalent, 2)
		require.Equal(t, atA.canonical, atA.equivalent[0])
		require.True(t, strings.HasPrefix(atA.equivalent[1], "did:orb:hl:"), atA.equivalent[1])
		hash := strings.TrimSuffix(strings.TrimPrefix(atA.canonical, "did:orb:"), ":"+id.Suffix)

		canonical(b, id)
		for _, name := range []string{
			atA.canonical, atA.equivalent[1], "did:orb:uAAA:" + id.Suffix,
			"did:orb:http:" + a.addr + ":" + hash + ":" + id.Suffix,
		} {
			for _, d := range []*relayDomain{a, b} {
				got := resolveOrb(t, d, name)
				require.Equal(t, http.StatusOK, got.status, "%s at %s", name, d.name)
				require.Equal(t, name, got.id, "the id is the name asked for")
				require.Equal(t, atA.canonical, got.canonical, "%s at %s", name, d.name)
				require.Equal(t, atA.equivalent, got.equivalent, "%s at %s", name, d.name)
				require.Equal(t, atA.document, got.document, "%s at %s", name, d.name)
			}
		}
	}

	// Orb's DID discovery asks a domain's WebFinger about a DID: the anchor origin, the
	// resolution URL and the canonical anchor's hashlink, which B knows as A does.
	first := canonical(a, ids[0])
	for _, d := range []*relayDomain{a, b} {
		resp, err := http.Get("http://" + d.addr + "/.well-known/webfinger?resource=" + first.canonical)
		require.NoError(t, err)
		var jrd struct {
			Properties map[string]any `json:"properties"`
			Links      []struct {
				Rel, Type, Href string
			} `json:"links"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&jrd))
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "http://"+a.addr, jrd.Properties["https://trustbloc.dev/ns/anchor-origin"])
		require.Len(t, jrd.Links, 3)
		require.Equal(t, "http://"+d.addr+"/sidetree/v1/identifiers/"+first.canonical, jrd.Links[0].Href)
		require.Equal(t, "via", jrd.Links[1].Rel)
		require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(first.equivalent[1], "did:orb:"), ":"+ids[0].Suffix), jrd.Links[1].Href)
		require.Equal(t, d.actor, jrd.Links[2].Href)
	}
	resp, err := http.Get("http://" + a.addr + "/.well-known/webfinger?resource=did:orb:uAAA:" + plainSuffix(t, plain))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a DID A does not hold")

	// An update reaches B and moves versionId, not the canonical name (as at Orb); a recover
	// moves the canonical name, and the old one, an ancestor, still resolves to the new one.
	before := canonical(b, ids[0])
	update, err := w.Update(ids[0], wallet.AddServices(wallet.Service{ID: "moved", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	code, body, err = a.api.post(update)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	var after orbResult
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		after = resolveOrb(t, b, before.canonical)
		return after.status == http.StatusOK && after.version != before.version && after.version != ""
	}, "the update reaches B")
	require.Contains(t, after.document, "moved")
	require.Equal(t, before.canonical, after.canonical, "an update keeps the canonical name")
	require.Equal(t, after, resolveOrb(t, a, before.canonical))

	recover, err := w.Recover(ids[0], wallet.AddServices(wallet.Service{ID: "recovered", Type: "LinkedDomains", Endpoint: "https://example.net"}))
	require.NoError(t, err)
	code, body, err = a.api.post(recover)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		after = resolveOrb(t, b, before.canonical)
		return after.status == http.StatusOK && after.canonical != before.canonical && after.canonical != ""
	}, "the recover reaches B and the old name resolves to the new one")
	require.Contains(t, after.document, "recovered")
	require.Equal(t, after, resolveOrb(t, a, before.canonical))

	unknown := "did:orb:uEiBw7XfdbDLHZ8yBT9lBDXUVmKzmY7UvKpGfnCjhxM0U7Q:" + ids[0].Suffix
	for _, d := range []*relayDomain{a, b} {
		require.Equal(t, http.StatusNotFound, resolveOrb(t, d, unknown).status, "an anchor %s does not know", d.name)
	}
}

// orbResolve resolves a DID at the real Orb server of the interop tests.
func orbResolve(t *testing.T, did string) orbResult {
	t.Helper()
	d := &relayDomain{t: t, name: "Orb", api: newClient(orbAddr)}
	return resolveOrb(t, d, did)
}

// TestOrbDIDNamesAtAnAnchordFollower runs a real Orb domain (ANCHORD_TEST_ORB_BIN) followed by
// an anchord domain in the did:orb profile. A DID created, updated and recovered at Orb resolves
// at anchord under the names Orb gives it (its canonical name, its hashlink name, uAAA) with
// Orb's canonicalId, equivalentId and versionId and the very document Orb renders, after each
// step: the update and the recover name their parent by the event url anchord recorded for it.
func TestOrbDIDNamesAtAnAnchordFollower(t *testing.T) {
	startOrb(t)
	d := startDomain(t, "anchord", "--did-method", "orb")
	orb := &relayDomain{t: t, name: "Orb", actor: "http://127.0.0.1/services/orb"}
	d.follow(orb)

	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://127.0.0.1"})
	id, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	post := func(req []byte) {
		t.Helper()
		code, body, err := newClient(orbAddr).post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
	}
	post(create)
	// Orb orders a DID's operations by the whole second of their anchor's credential and ignores
	// an update anchored in the second of the DID's create or last recover, yet does not keep its
	// own anchors a second apart. So each operation is posted only once the clock has left the
	// second in which its predecessor was seen anchored (that credential was issued by then);
	// the recover waits too, so that no two of the DID's anchors share a second.
	var anchoredBy time.Time
	afterAnchor := func() {
		time.Sleep(time.Until(anchoredBy.Truncate(time.Second).Add(time.Second)))
	}
	same := func(step string, previous string) orbResult {
		t.Helper()
		var atOrb orbResult
		anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
			atOrb = orbResolve(t, "did:orb:uAAA:"+id.Suffix)
			anchoredBy = time.Now()
			return atOrb.status == http.StatusOK && atOrb.canonical != "" && atOrb.version != previous
		}, "%s: Orb has anchored it", step)
		anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
			return resolveOrb(t, d, "did:orb:uAAA:"+id.Suffix).version == atOrb.version
		}, "%s: anchord has Orb's anchor", step)
		for _, name := range append([]string{"did:orb:uAAA:" + id.Suffix}, atOrb.equivalent...) {
			want, got := orbResolve(t, name), resolveOrb(t, d, name)
			require.Equal(t, http.StatusOK, got.status, "%s: %s at anchord", step, name)
			require.Equal(t, want, got, "%s: %s at anchord as at Orb", step, name)
		}
		return atOrb
	}
	created := same("create", "")
	update, err := w.Update(id, wallet.AddServices(wallet.Service{ID: "moved", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	afterAnchor()
	post(update)
	updated := same("update", created.version)
	require.Contains(t, updated.document, "https://example.org")
	require.Equal(t, created.canonical, updated.canonical, "an update keeps the canonical name")
	recover, err := w.Recover(id, wallet.AddServices(wallet.Service{ID: "recovered", Type: "LinkedDomains", Endpoint: "https://example.net"}))
	require.NoError(t, err)
	afterAnchor()
	post(recover)
	recovered := same("recover", updated.version)
	require.NotEqual(t, created.canonical, recovered.canonical, "a recover moves it")
	want, got := orbResolve(t, created.canonical), resolveOrb(t, d, created.canonical)
	require.Equal(t, http.StatusOK, got.status, "the first anchor is an ancestor")
	require.Equal(t, want, got)
}

// plainSuffix returns the suffix of a create request's DID.
func plainSuffix(t *testing.T, create []byte) string {
	t.Helper()
	op, err := sidetree.ParseOperation(create, sidetree.DefaultProfile())
	require.NoError(t, err)
	return op.Suffix
}

// TestOrbDIDDiscovery: C, with --enable-did-discovery, follows nobody. A name of one of A's DIDs
// that says where it lives (a domain hint, or the hashlink with its link) is not found at C at
// first, and C asks A's WebFinger, fetches the anchor and its files from A and applies it: a
// retry finds the DID with A's document and names. A bare canonical name says nowhere to look
// and is not discovered, as at Orb; B, without the flag, never finds the DID.
func TestOrbDIDDiscovery(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", "--did-method", "orb")
	b := startDomain(t, "B", "--did-method", "orb")
	c := startDomainEnv(t, "C", []string{"DID_DISCOVERY_ENABLED=true"}, "--did-method", "orb")

	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://" + a.addr})
	// One DID at a time, each in its own anchor: discovering an anchor applies every DID in it.
	for i := range 2 {
		id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
		require.NoError(t, err)
		code, body, err := a.api.post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		var atA orbResult
		anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			atA = resolveOrb(t, a, "did:orb:uAAA:"+id.Suffix)
			return atA.status == http.StatusOK && atA.canonical != ""
		}, "A names %s canonically", id.Suffix)
		hash := strings.TrimSuffix(strings.TrimPrefix(atA.canonical, "did:orb:"), ":"+id.Suffix)
		require.Equal(t, http.StatusNotFound, resolveOrb(t, c, atA.canonical).status, "a bare name says nowhere to look")

		name := "did:orb:http:" + a.addr + ":" + hash + ":" + id.Suffix // a domain hint
		if i == 1 {
			name = atA.equivalent[1] // the hashlink with its link to A's /cas
		}
		var got orbResult
		anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
			got = resolveOrb(t, c, name)
			return got.status == http.StatusOK
		}, "C discovers %s", name)
		want := resolveOrb(t, a, name)
		require.Equal(t, want, got, "C resolves %s as A does", name)
		require.Equal(t, atA.canonical, resolveOrb(t, c, atA.canonical).canonical, "and by its canonical name from then on")
		require.Equal(t, http.StatusNotFound, resolveOrb(t, b, name).status, "B does not discover")
	}

	// A DID recovered after its create: its canonical anchor is the recover's, whose parent is
	// the create's anchor. C fetches that one too, and applies both.
	id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	code, body, err := a.api.post(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	var created orbResult
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		created = resolveOrb(t, a, "did:orb:uAAA:"+id.Suffix)
		return created.status == http.StatusOK && created.canonical != ""
	}, "A names %s canonically", id.Suffix)
	recover, err := w.Recover(id, wallet.AddServices(wallet.Service{ID: "moved", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	anchordtest.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		code, body, err = a.api.post(recover)
		require.NoError(t, err)
		return code == http.StatusOK || !strings.Contains(string(body), "queueing_multiple_operations_per_did_not_allowed")
	}, "the recover is taken")
	require.Equal(t, http.StatusOK, code, string(body))
	var recovered orbResult
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		recovered = resolveOrb(t, a, "did:orb:uAAA:"+id.Suffix)
		return recovered.canonical != "" && recovered.canonical != created.canonical
	}, "A names %s by its recover's anchor", id.Suffix)
	name := recovered.equivalent[1]
	var got orbResult
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		got = resolveOrb(t, c, name)
		return got.status == http.StatusOK
	}, "C discovers %s with its create's anchor", name)
	require.Equal(t, resolveOrb(t, a, name), got, "C resolves %s as A does", name)
	require.Contains(t, got.document, "https://example.org")
	require.Positive(t, c.api.metric(t, `anchord_relay_anchors_total{outcome="applied"}`))
}

// TestOrbLoadResolvesAtAnAnchordFollower: an anchord domain in the did:orb profile follows a
// real Orb domain, and 100 creates (1,000 with ANCHORD_TEST_ORB_FULL) are posted to Orb. Every
// DID resolves at anchord under each name Orb gives it, with Orb's document and metadata. It
// prints accept→resolvable at Orb and at anchord (from the POST to Orb's answer).
func TestOrbLoadResolvesAtAnAnchordFollower(t *testing.T) {
	startOrb(t)
	d := startDomain(t, "anchord", "--did-method", "orb")
	orb := &relayDomain{t: t, name: "Orb", actor: "http://127.0.0.1/services/orb"}
	d.follow(orb)

	n, _ := orbLoadSize()
	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://127.0.0.1"})
	suffixes := make([]string, n)
	accepted := make([]time.Time, n)
	for i := range n {
		id, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
		require.NoError(t, err)
		code, body, err := newClient(orbAddr).post(create)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		suffixes[i], accepted[i] = id.Suffix, time.Now()
	}

	// Each DID is looked at until Orb has anchored it and anchord holds the same version.
	atOrb, atAnchord := make([]time.Duration, n), make([]time.Duration, n)
	versions := make([]string, n)
	anchordtest.Eventually(t, 3*time.Minute, 100*time.Millisecond, func() bool {
		done := true
		for i, s := range suffixes {
			if atAnchord[i] != 0 {
				continue
			}
			if atOrb[i] == 0 {
				r := orbResolve(t, "did:orb:uAAA:"+s)
				if r.status != http.StatusOK || r.canonical == "" {
					done = false
					continue
				}
				atOrb[i], versions[i] = time.Since(accepted[i]), r.version
			}
			if r := resolveOrb(t, d, "did:orb:uAAA:"+s); r.status == http.StatusOK && r.version == versions[i] {
				atAnchord[i] = time.Since(accepted[i])
			} else {
				done = false
			}
		}
		return done
	}, "every DID created at Orb resolves at anchord")

	for _, s := range suffixes {
		want := orbResolve(t, "did:orb:uAAA:"+s)
		for _, name := range append([]string{"did:orb:uAAA:" + s}, want.equivalent...) {
			require.Equal(t, orbResolve(t, name), resolveOrb(t, d, name), "%s at anchord as at Orb", name)
		}
	}
	slices.Sort(atOrb)
	slices.Sort(atAnchord)
	t.Logf("accept→resolvable of %d DIDs created at Orb: at Orb p50 %s, p95 %s; at anchord p50 %s, p95 %s", n,
		quantile(atOrb, 0.5).Round(time.Millisecond), quantile(atOrb, 0.95).Round(time.Millisecond),
		quantile(atAnchord, 0.5).Round(time.Millisecond), quantile(atAnchord, 0.95).Round(time.Millisecond))
}
