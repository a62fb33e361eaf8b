package main

import (
	"encoding/json"
	"net/http"
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
		canonical: r.Meta.Canonical, equivalent: r.Meta.Equivalent, published: r.Meta.Method.Published}
}

// TestOrbNamesAcrossDomains: two domains in the did:orb profile, B following A. A answers a
// create as Orb does (did:orb:uAAA:<suffix>, with its domain's name of it); once anchored, A
// names each DID did:orb:<anchor hash>:<suffix> with the hashlink name as equivalentId, and B
// resolves it under each of those names and the domain hint with the same document and the same
// canonicalId; after an update, the old canonical name still resolves (an ancestor) to the new
// one, and a name with an anchor hash neither domain knows is not found.
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
	require.Contains(t, string(body), "anchor_origin_missing")

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

	// An update moves the canonical name; the old one is an ancestor and still resolves.
	before := canonical(b, ids[0])
	update, err := w.Update(ids[0], wallet.AddServices(wallet.Service{ID: "moved", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	code, body, err = a.api.post(update)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	var after orbResult
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		after = resolveOrb(t, b, before.canonical)
		return after.status == http.StatusOK && after.canonical != before.canonical && after.canonical != ""
	}, "the update reaches B and the old name resolves to the new one")
	require.Contains(t, after.document, "moved")
	require.Equal(t, after.canonical, resolveOrb(t, a, before.canonical).canonical)

	unknown := "did:orb:uEiBw7XfdbDLHZ8yBT9lBDXUVmKzmY7UvKpGfnCjhxM0U7Q:" + ids[0].Suffix
	for _, d := range []*relayDomain{a, b} {
		require.Equal(t, http.StatusNotFound, resolveOrb(t, d, unknown).status, "an anchor %s does not know", d.name)
	}
}
