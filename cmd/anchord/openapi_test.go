package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// textDecoders registers kin-openapi's (process-wide) body decoders for the text bodies of the
// document, once.
var textDecoders sync.Once

// exchange is one request to a running domain and the OpenAPI path it is an instance of.
type exchange struct {
	d       *relayDomain
	path    string // the document's path template
	method  string
	target  string // path and query sent
	header  http.Header
	body    []byte
	signer  *httpSigner // signs the request (HTTP signature) when set
	status  int         // filled in when sent
	respHdr http.Header
	resp    []byte
}

// httpSigner is a domain's key, to sign requests as that domain.
type httpSigner struct {
	keyID string
	key   ed25519.PrivateKey
}

// noRedirect answers a redirect as it is, so that the 301 is what gets validated.
var noRedirect = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

func (e *exchange) send(t *testing.T) {
	t.Helper()
	req, err := http.NewRequest(e.method, "http://"+e.d.addr+e.target, bytes.NewReader(e.body))
	require.NoError(t, err)
	for k, vs := range e.header {
		req.Header[k] = vs
	}
	if e.signer != nil {
		s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: e.signer.keyID, PrivateKey: e.signer.key})
		require.NoError(t, err)
		require.NoError(t, s.Sign(req))
	}
	resp, err := noRedirect.Do(req)
	require.NoError(t, err, "%s %s", e.method, e.target)
	defer resp.Body.Close()
	e.resp, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	e.status, e.respHdr = resp.StatusCode, resp.Header
}

// TestOpenAPIDescribesRealAnswers records real answers of every route of the API listener
// (200s and errors, with each representation a route offers) from two domains — A anchoring
// with the witness backend and guarding one route with an API token, B witnessing A's anchors
// into its witness log and following A — and validates each with kin-openapi's response
// validator against the document A serves at GET /openapi.json: the status must be documented,
// and the body must match its media type's schema. Every operation of the document must have
// been answered at least once.
func TestOpenAPIDescribesRealAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyFile, bKey := writeKeyFile(t)
	// B is also a C2SP tlog-witness of a log the test signs for.
	logOrigin := "example.com/openapi-test-log"
	logSigner, logVerifier, err := note.GenerateKey(rand.Reader, logOrigin)
	require.NoError(t, err)
	knownLogs := filepath.Join(t.TempDir(), "known-logs")
	require.NoError(t, os.WriteFile(knownLogs, []byte(logVerifier+"\n"), 0o600))
	b := startDomain(t, "B", "--witness-log", "--witness-log-checkpoint-interval", "200ms", "--key-file", keyFile,
		"--tlog-witness", "--tlog-witness-logs", knownLogs)
	a := startDomain(t, "A", append(slices.Clone(witnessTiming),
		"--auth-tokens-def", `^/explorer/api/pipeline|read|`, "--auth-tokens", "read=s3cret")...)
	a.admin("policy", "set", "OutOf(1,system)")
	a.invite(b)
	b.follow(a)

	// A DID that stays, one updated, one deactivated, all anchored and witnessed.
	w := wallet.New(wallet.Config{})
	live, create, err := w.Create()
	require.NoError(t, err)
	gone, createGone, err := w.Create()
	require.NoError(t, err)
	for _, op := range [][]byte{create, createGone} {
		code, body, err := a.api.post(op)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
	}
	published := func(did string) func() bool {
		return func() bool { return a.resolve(did).published }
	}
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, published(live.DID()), "the first DID is published")
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, published(gone.DID()), "the second DID is published")
	deactivate, err := w.Deactivate(gone)
	require.NoError(t, err)
	code, body, err := a.api.post(deactivate)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return a.resolve(gone.DID()).status == http.StatusGone
	}, "the second DID is deactivated")
	anchors := a.api.anchors(t)
	require.NotEmpty(t, anchors)
	anchor := anchors[0]
	require.NotEmpty(t, anchor.Credential)
	credential := anchor.Credential[strings.LastIndex(anchor.Credential, "/")+1:]
	activities := a.outboxItems()
	require.NotEmpty(t, activities)
	var firstActivity struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(activities[0], &firstActivity))
	activityPath, err := url.Parse(firstActivity.ID)
	require.NoError(t, err)

	// B's log holds A's credentials once a checkpoint covers them.
	var logSize int
	anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		resp, err := http.Get("http://" + b.addr + "/log/checkpoint")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		lines := strings.Split(string(body), "\n")
		if len(lines) < 2 {
			return false
		}
		_, err = fmt.Sscan(lines[1], &logSize)
		return err == nil && logSize > 0
	}, "B's log has a checkpoint with entries")
	require.Less(t, logSize, 256, "one partial tile")

	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	profile := `application/ld+json;profile="https://w3id.org/did-resolution"`
	unknown := "did:sidetree:EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg"
	_, third, err := w.Create()
	require.NoError(t, err)
	m := newPeerStandIn(t)
	stranger := &httpSigner{keyID: m.keyID(), key: m.key}            // a domain A does not know
	asB := &httpSigner{keyID: b.actor + "/keys/main-key", key: bKey} // A's witness and follower
	signer, err := note.NewSigner(logSigner)
	require.NoError(t, err)
	emptyRoot := sha256.Sum256(nil)
	checkpoint, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n0\n%s\n", logOrigin, base64.StdEncoding.EncodeToString(emptyRoot[:]))}, signer)
	require.NoError(t, err)
	grown, err := note.Sign(&note.Note{Text: fmt.Sprintf("%s\n1\n%s\n", logOrigin, base64.StdEncoding.EncodeToString(emptyRoot[:]))}, signer)
	require.NoError(t, err)
	foreign, err := note.Sign(&note.Note{Text: fmt.Sprintf("example.com/unknown-log\n0\n%s\n", base64.StdEncoding.EncodeToString(emptyRoot[:]))}, signer)
	require.NoError(t, err)
	originHash := sha256.Sum256([]byte(logOrigin))
	ex := []*exchange{
		{d: a, path: "/sidetree/v1/operations", method: http.MethodPost, target: "/sidetree/v1/operations", body: third, header: h("Content-Type", "application/json")},
		{d: a, path: "/sidetree/v1/operations", method: http.MethodPost, target: "/sidetree/v1/operations", body: []byte(`{"type":"create"}`), header: h("Content-Type", "application/json")},
		{d: a, path: "/openapi.json", method: http.MethodGet, target: "/openapi.json"},
		{d: a, path: "/version", method: http.MethodGet, target: "/version"},
		{d: a, path: "/healthcheck", method: http.MethodGet, target: "/healthcheck"},
		{d: a, path: "/metrics", method: http.MethodGet, target: "/metrics"},
		{d: a, path: "/sidetree/v1/anchors", method: http.MethodGet, target: "/sidetree/v1/anchors?limit=2"},
		{d: a, path: "/sidetree/v1/anchors", method: http.MethodGet, target: "/sidetree/v1/anchors?limit=zero"},
		{d: a, path: "/cas/{cid}", method: http.MethodGet, target: "/cas/" + anchor.CoreIndexCID},
		{d: a, path: "/cas/{cid}", method: http.MethodGet, target: "/cas/" + cas.ComputeCID([]byte("stored nowhere"), cas.CIDv0)},
		{d: a, path: "/cas/{cid}", method: http.MethodGet, target: "/cas/not-a-cid"},
		{d: a, path: "/vc/{id}", method: http.MethodGet, target: "/vc/" + credential},
		{d: a, path: "/vc/{id}", method: http.MethodGet, target: "/vc/0b8f5e4e-0000-4000-8000-000000000000"},
		{d: a, path: "/vc/{id}", method: http.MethodGet, target: "/vc/x%3Fy"},
		{d: a, path: "/services/anchord", method: http.MethodGet, target: federation.ServicePath},
		{d: a, path: "/services/anchord/keys/main-key", method: http.MethodGet, target: federation.ServicePath + "/keys/main-key"},
		{d: a, path: "/services/anchord/inbox", method: http.MethodPost, target: federation.ServicePath + "/inbox", body: []byte(`{}`), header: h("Content-Type", "application/activity+json")},
		{d: a, path: "/services/anchord/inbox", method: http.MethodPost, target: federation.ServicePath + "/inbox", header: h("Content-Type", "application/activity+json"),
			body: []byte(`{"type":"Like","content":"` + strings.Repeat("x", 100<<10) + `"}`)},
		{d: a, path: "/services/anchord/inbox", method: http.MethodGet, target: federation.ServicePath + "/inbox"},
		{d: a, path: "/services/anchord/outbox", method: http.MethodGet, target: federation.ServicePath + "/outbox"},
		{d: a, path: "/services/anchord/outbox", method: http.MethodGet, target: federation.ServicePath + "/outbox?page=true&page-num=0"},
		{d: a, path: "/services/anchord/outbox", method: http.MethodGet, target: federation.ServicePath + "/outbox?page=true&page-num=x"},
		{d: a, path: "/services/anchord/followers", method: http.MethodGet, target: federation.ServicePath + "/followers"},
		{d: a, path: "/services/anchord/followers", method: http.MethodGet, target: federation.ServicePath + "/followers", signer: stranger},
		{d: a, path: "/services/anchord/inbox", method: http.MethodGet, target: federation.ServicePath + "/inbox", signer: stranger},
		{d: a, path: "/services/anchord/followers", method: http.MethodGet, target: federation.ServicePath + "/followers?page=true", signer: asB},
		{d: a, path: "/services/anchord/following", method: http.MethodGet, target: federation.ServicePath + "/following", signer: asB},
		{d: a, path: "/services/anchord/inbox", method: http.MethodGet, target: federation.ServicePath + "/inbox?page=true&page-num=0", signer: asB},
		{d: a, path: "/services/anchord/witnesses", method: http.MethodGet, target: federation.ServicePath + "/witnesses?page=true", signer: asB},
		{d: a, path: "/services/anchord/witnessing", method: http.MethodGet, target: federation.ServicePath + "/witnessing", signer: asB},
		{d: a, path: "/services/anchord/liked", method: http.MethodGet, target: federation.ServicePath + "/liked", signer: asB},
		{d: a, path: "/services/anchord/following", method: http.MethodGet, target: federation.ServicePath + "/following"},
		{d: a, path: "/services/anchord/witnesses", method: http.MethodGet, target: federation.ServicePath + "/witnesses"},
		{d: a, path: "/services/anchord/witnessing", method: http.MethodGet, target: federation.ServicePath + "/witnessing"},
		{d: a, path: "/services/anchord/liked", method: http.MethodGet, target: federation.ServicePath + "/liked"},
		{d: a, path: "/services/anchord/activities/{id}", method: http.MethodGet, target: activityPath.Path},
		{d: a, path: "/services/anchord/activities/{id}", method: http.MethodGet, target: federation.ServicePath + "/activities/no-such-activity"},
		{d: a, path: "/.well-known/host-meta.json", method: http.MethodGet, target: "/.well-known/host-meta.json"},
		{d: a, path: "/.well-known/host-meta", method: http.MethodGet, target: "/.well-known/host-meta"},
		{d: a, path: "/.well-known/webfinger", method: http.MethodGet, target: "/.well-known/webfinger?resource=" + url.QueryEscape(a.actor)},
		{d: b, path: "/.well-known/webfinger", method: http.MethodGet, target: "/.well-known/webfinger?resource=" + url.QueryEscape("http://"+b.addr+"/log")},
		{d: a, path: "/.well-known/webfinger", method: http.MethodGet, target: "/.well-known/webfinger?resource=https://elsewhere.example/x"},
		{d: a, path: "/.well-known/did.json", method: http.MethodGet, target: "/.well-known/did.json"},
		// Served in the did:orb profile only (A and B are not in it; federation's tests read the 200).
		{d: a, path: "/.well-known/did-orb", method: http.MethodGet, target: "/.well-known/did-orb"},
		{d: a, path: "/explorer", method: http.MethodGet, target: "/explorer"},
		{d: a, path: "/explorer/", method: http.MethodGet, target: "/explorer/"},
		{d: a, path: "/explorer/assets/{name}", method: http.MethodGet, target: "/explorer/assets/app.js"},
		{d: a, path: "/explorer/assets/{name}", method: http.MethodGet, target: "/explorer/assets/style.css"},
		{d: a, path: "/explorer/assets/{name}", method: http.MethodGet, target: "/explorer/assets/none.js"},
		{d: a, path: "/explorer/api/", method: http.MethodGet, target: "/explorer/api/nothing"},
		{d: a, path: "/explorer/api/dids/{did}/operations", method: http.MethodGet, target: "/explorer/api/dids/" + live.DID() + "/operations"},
		{d: a, path: "/explorer/api/dids/{did}/operations", method: http.MethodGet, target: "/explorer/api/dids/not-a-did/operations"},
		{d: a, path: "/explorer/api/anchors", method: http.MethodGet, target: "/explorer/api/anchors"},
		{d: a, path: "/explorer/api/anchors/{seq}", method: http.MethodGet, target: fmt.Sprintf("/explorer/api/anchors/%d", anchor.Seq)},
		{d: a, path: "/explorer/api/anchors/{seq}", method: http.MethodGet, target: "/explorer/api/anchors/999999"},
		{d: a, path: "/explorer/api/anchors/{seq}", method: http.MethodGet, target: "/explorer/api/anchors/x"},
		{d: a, path: "/explorer/api/pipeline", method: http.MethodGet, target: "/explorer/api/pipeline", header: h("Authorization", "Bearer s3cret")},
		{d: a, path: "/explorer/api/pipeline", method: http.MethodGet, target: "/explorer/api/pipeline"},
		{d: a, path: "/explorer/api/federation", method: http.MethodGet, target: "/explorer/api/federation"},
		{d: b, path: "/log/checkpoint", method: http.MethodGet, target: "/log/checkpoint"},
		{d: b, path: "/witness/add-checkpoint", method: http.MethodPost, target: "/witness/add-checkpoint", body: append([]byte("old 0\n\n"), checkpoint...)},
		{d: b, path: "/witness/add-checkpoint", method: http.MethodPost, target: "/witness/add-checkpoint", body: append([]byte("old 1\n\n"), grown...)},
		{d: b, path: "/witness/add-checkpoint", method: http.MethodPost, target: "/witness/add-checkpoint", body: append([]byte("old 0\n\n"), foreign...)},
		{d: b, path: "/witness/add-checkpoint", method: http.MethodPost, target: "/witness/add-checkpoint", body: []byte("not a request")},
		{d: b, path: "/witness/{hash}/checkpoint", method: http.MethodGet, target: "/witness/" + hex.EncodeToString(originHash[:]) + "/checkpoint"},
		{d: b, path: "/witness/{hash}/checkpoint", method: http.MethodGet, target: "/witness/" + strings.Repeat("0", 64) + "/checkpoint"},
		{d: b, path: "/witness/{hash}/checkpoint", method: http.MethodGet, target: "/witness/NOT-HEX/checkpoint"},
		{d: b, path: "/log/tile/{level}/{index}", method: http.MethodGet, target: fmt.Sprintf("/log/tile/0/000.p/%d", logSize)},
		{d: b, path: "/log/tile/{level}/{index}", method: http.MethodGet, target: "/log/tile/0/x001/000"},
		{d: b, path: "/log/tile/{level}/{index}", method: http.MethodGet, target: "/log/tile/0/nope"},
		{d: b, path: "/log/tile/entries/{index}", method: http.MethodGet, target: fmt.Sprintf("/log/tile/entries/000.p/%d", logSize)},
		{d: b, path: "/log/tile/entries/{index}", method: http.MethodGet, target: "/log/tile/entries/x001/000"},
		{d: b, path: "/log/tile/entries/{index}", method: http.MethodGet, target: "/log/tile/entries/nope"},
	}
	for _, did := range []string{live.DID(), gone.DID()} {
		for _, accept := range []string{"", profile, "application/did+ld+json", "application/did+json"} {
			for _, route := range []string{"/sidetree/v1/identifiers/{did}", "/1.0/identifiers/{did}"} {
				ex = append(ex, &exchange{d: a, path: route, method: http.MethodGet,
					target: strings.Replace(route, "{did}", did, 1), header: h("Accept", accept)})
			}
		}
	}
	for _, target := range []string{unknown, "did:other:abc", unknown + "?versionTime=yesterday", live.DID() + "?versionId=nope"} {
		for _, route := range []string{"/sidetree/v1/identifiers/{did}", "/1.0/identifiers/{did}"} {
			ex = append(ex, &exchange{d: a, path: route, method: http.MethodGet, target: strings.Replace(route, "{did}", target, 1)})
		}
	}
	for _, route := range []string{"/sidetree/v1/identifiers/{did}", "/1.0/identifiers/{did}"} {
		ex = append(ex, &exchange{d: a, path: route, method: http.MethodGet, target: strings.Replace(route, "{did}", live.DID(), 1), header: h("Accept", "text/html")})
	}

	// The document describes these bodies as strings; kin-openapi decodes only text/plain so.
	textDecoders.Do(func() {
		for _, mt := range []string{"text/html", "text/javascript", "text/css", "application/xrd+xml", "text/x.tlog.size"} {
			openapi3filter.RegisterBodyDecoder(mt, openapi3filter.PlainBodyDecoder)
		}
	})

	// The document the server itself serves.
	served := &exchange{d: a, method: http.MethodGet, target: "/openapi.json"}
	served.send(t)
	require.Equal(t, http.StatusOK, served.status)
	doc, err := openapi3.NewLoader().LoadFromData(served.resp)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(ctx))

	answered := map[string][]int{} // "METHOD path" → statuses
	for _, e := range ex {
		e.send(t)
		item := doc.Paths.Value(e.path)
		require.NotNil(t, item, "%s is not in the document", e.path)
		op := item.GetOperation(e.method)
		require.NotNil(t, op, "%s %s is not in the document", e.method, e.path)
		req, err := http.NewRequest(e.method, "http://"+e.d.addr+e.target, nil)
		require.NoError(t, err)
		req.Header = e.header
		input := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{
				Request: req,
				Route:   &routers.Route{Spec: doc, Path: e.path, PathItem: item, Method: e.method, Operation: op},
			},
			Status: e.status, Header: e.respHdr, Body: io.NopCloser(bytes.NewReader(e.resp)),
			Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
		}
		shown := e.resp
		if len(shown) > 600 {
			shown = append(shown[:600:600], "…"...)
		}
		require.NoError(t, openapi3filter.ValidateResponse(ctx, input), "%s %s answered %d (%s):\n%s",
			e.method, e.target, e.status, e.respHdr.Get("Content-Type"), shown)
		key := e.method + " " + e.path
		answered[key] = append(answered[key], e.status)
	}

	var report []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			key := method + " " + path
			require.NotEmpty(t, answered[key], "no recorded answer of %s", key)
			report = append(report, fmt.Sprintf("%s %v", key, answered[key]))
		}
	}
	sort.Strings(report)
	t.Logf("%d answers of %d operations validated:\n%s", len(ex), len(report), strings.Join(report, "\n"))
}
