package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// answer is a domain's answer to one request.
type answer struct {
	status      int
	contentType string
	body        string
}

// ask sends a request to the domain at base.
func ask(t *testing.T, base, method, path string, body []byte, accept string) answer {
	t.Helper()
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(b)}
}

// TestOrbAnswersAsOrb sends the same requests to a real Orb domain and to an anchord domain in
// the did:orb profile, good and bad ones, on /sidetree/v1/operations, /sidetree/v1/identifiers
// and /cas, and compares what comes back: the same status and Content-Type, and the same body
// where Orb's does not depend on its own wording of a reason (a refused operation is "bad
// request: <reason>" at both). Where Orb answers a client's bad input with a 500, anchord
// keeps a 4xx, and the test says which.
func TestOrbAnswersAsOrb(t *testing.T) {
	startOrb(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		// Orb's origin is accepted here too, so that one request is valid at both.
		Args: []string{"serve", "--did-method", "orb", "--host-url", addr, "--external-endpoint", "http://" + addr,
			"--allowed-origins", "http://127.0.0.1,http://" + addr, "--batch-writer-timeout", "300ms"},
		Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	orb, here := "http://"+orbAddr, "http://"+addr

	w := wallet.New(wallet.Config{Profile: sidetree.Profile{Method: "orb"}, AnchorOrigin: "http://127.0.0.1"})
	id, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "s", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	_, noOrigin, err := wallet.New(wallet.Config{Profile: sidetree.Profile{Method: "orb"}}).Create()
	require.NoError(t, err)
	_, replace, err := w.Create(wallet.Replace(wallet.Document{}))
	require.NoError(t, err)
	stranger, _, err := w.Create()
	require.NoError(t, err)
	updateStranger, err := w.Update(stranger, wallet.AddServices(wallet.Service{ID: "u", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	noPatches, err := w.Update(stranger)
	require.NoError(t, err)
	update, err := w.Update(id, wallet.AddServices(wallet.Service{ID: "u", Type: "LinkedDomains", Endpoint: "https://example.org"}))
	require.NoError(t, err)
	badSignature := bytes.Replace(update, []byte(`"signedData":"ey`), []byte(`"signedData":"eyX`), 1)
	tooLarge := bytes.Replace(create, []byte(`"type":"create"`), []byte(`"type":"create","x":"`+strings.Repeat("a", 3000)+`"`), 1)
	uaaa := "did:orb:uAAA:" + id.Suffix
	unknownHash := "uEiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A"

	const (
		// same: status, Content-Type and body are Orb's.
		same = iota
		// sameShape: status and Content-Type are Orb's, and the body starts as Orb's does
		// (prefix); the reason after it is anchord's wording.
		sameShape
		// ours: anchord answers status where Orb answers a 500 to the client's own mistake.
		ours
	)
	type request struct {
		name   string
		method string
		path   string
		body   []byte
		accept string
		// match says how anchord's answer compares with Orb's; prefix and status go with it.
		match  int
		prefix string
		status int
	}
	check := func(r request) {
		t.Helper()
		theirs := ask(t, orb, r.method, r.path, r.body, r.accept)
		got := ask(t, here, r.method, r.path, r.body, r.accept)
		t.Logf("%s: Orb %d %q %.120q; anchord %d %q %.120q", r.name, theirs.status, theirs.contentType, theirs.body, got.status, got.contentType, got.body)
		switch r.match {
		case same:
			require.Equal(t, theirs, got, r.name)
		case sameShape:
			require.Equal(t, theirs.status, got.status, r.name)
			require.Equal(t, theirs.contentType, got.contentType, r.name)
			require.True(t, strings.HasPrefix(theirs.body, r.prefix), "%s: Orb's body %q", r.name, theirs.body)
			require.True(t, strings.HasPrefix(got.body, r.prefix), "%s: anchord's body %q", r.name, got.body)
		case ours:
			require.Equal(t, http.StatusInternalServerError, theirs.status, "%s: Orb's answer changed: %q", r.name, theirs.body)
			require.Equal(t, r.status, got.status, r.name)
			require.Equal(t, theirs.contentType, got.contentType, r.name)
			require.True(t, strings.HasPrefix(got.body, r.prefix), "%s: anchord's body %q", r.name, got.body)
		}
	}
	const ops = "/sidetree/v1/operations"
	for _, r := range []request{
		{name: "not JSON", method: http.MethodPost, path: ops, body: []byte("not json"), match: sameShape, prefix: "bad request: "},
		{name: "empty", method: http.MethodPost, path: ops, match: sameShape, prefix: "bad request: "},
		{name: "an array", method: http.MethodPost, path: ops, body: []byte("[]"), match: sameShape, prefix: "bad request: "},
		{name: "unknown type", method: http.MethodPost, path: ops, body: []byte(`{"type":"foo"}`), match: sameShape, prefix: "bad request: "},
		{name: "no anchorOrigin", method: http.MethodPost, path: ops, body: noOrigin, match: same},
		{name: "replace patch", method: http.MethodPost, path: ops, body: replace, match: sameShape, prefix: "bad request: "},
		{name: "too large", method: http.MethodPost, path: ops, body: tooLarge, match: same},
		{name: "over the HTTP body limit", method: http.MethodPost, path: ops, body: bytes.Repeat([]byte("a"), 3<<20), match: same},
		{name: "no patches", method: http.MethodPost, path: ops, body: noPatches, match: same},
		{name: "update of an unknown DID", method: http.MethodPost, path: ops, body: updateStranger, match: same},
		{name: "bad signature", method: http.MethodPost, path: ops, body: badSignature, match: sameShape, prefix: "bad request: "},
		{name: "create", method: http.MethodPost, path: ops, body: create, match: sameShape, prefix: `{"@context":"https://w3id.org/did-resolution/v1","didDocument":`},
		{name: "unknown DID", method: http.MethodGet, path: "/sidetree/v1/identifiers/did:orb:uAAA:" + stranger.Suffix, match: same},
		{name: "unknown anchor", method: http.MethodGet, path: "/sidetree/v1/identifiers/did:orb:" + unknownHash + ":" + stranger.Suffix, match: same},
		{name: "unknown hashlink", method: http.MethodGet, path: "/sidetree/v1/identifiers/did:orb:hl:" + unknownHash + ":" + stranger.Suffix, match: same},
		{name: "malformed suffix", method: http.MethodGet, path: "/sidetree/v1/identifiers/did:orb:uAAA:abc", match: same},
		{name: "malformed long form", method: http.MethodGet, path: "/sidetree/v1/identifiers/" + uaaa + ":eyJ", match: same},
		{name: "both versionId and versionTime", method: http.MethodGet, path: "/sidetree/v1/identifiers/" + uaaa + "?versionId=x&versionTime=2020-01-01T00:00:00Z", match: same},
		{name: "another method", method: http.MethodGet, path: "/sidetree/v1/identifiers/did:sidetree:" + stranger.Suffix, match: ours, status: http.StatusBadRequest, prefix: "did method not supported for id[did:sidetree:"},
		{name: "not a DID", method: http.MethodGet, path: "/sidetree/v1/identifiers/hello", match: ours, status: http.StatusBadRequest, prefix: "did method not supported for id[hello]"},
		{name: "unknown CID", method: http.MethodGet, path: "/cas/QmNLei78zWmzUdbeRB3CiUfAizWUrbeeZh5K1rhAQKCh51", match: same},
		{name: "unknown hash", method: http.MethodGet, path: "/cas/" + unknownHash, match: same},
		{name: "unknown hashlink", method: http.MethodGet, path: "/cas/hl:" + unknownHash, match: same},
		{name: "not a CID", method: http.MethodGet, path: "/cas/notacid", match: same},
	} {
		check(r)
	}

	// Once the create is anchored at both: resolution whatever the Accept, an update, and
	// versions.
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return ask(t, orb, http.MethodGet, "/sidetree/v1/identifiers/"+uaaa, nil, "").status == http.StatusOK &&
			ask(t, here, http.MethodGet, "/sidetree/v1/identifiers/"+uaaa, nil, "").status == http.StatusOK
	}, "the create is anchored at Orb and at anchord")
	for _, accept := range []string{"", "application/did+ld+json", "application/json", "application/did+json", "application/xml"} {
		check(request{name: "resolve, Accept " + accept, method: http.MethodGet, path: "/sidetree/v1/identifiers/" + uaaa, accept: accept,
			match: sameShape, prefix: `{"@context":"https://w3id.org/did-resolution/v1","didDocument":`})
	}
	for _, r := range []request{
		{name: "unparsable versionTime", method: http.MethodGet, path: "/sidetree/v1/identifiers/" + uaaa + "?versionTime=yesterday", match: ours, status: http.StatusBadRequest, prefix: "versionTime must be"},
		{name: "unknown versionId", method: http.MethodGet, path: "/sidetree/v1/identifiers/" + uaaa + "?versionId=" + unknownHash, match: ours, status: http.StatusNotFound, prefix: "the DID has no such version"},
		{name: "update", method: http.MethodPost, path: ops, body: update, match: same},
	} {
		check(r)
	}
}
