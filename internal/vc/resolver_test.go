package vc

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/egress"
)

type resolverBundle struct {
	did     string
	port    int
	resolve ResolveKeyFunc
	// body is what /.well-known/did.json answers; tests replace it while the server runs.
	body atomic.Pointer[func(w http.ResponseWriter)]
}

func (b *resolverBundle) setBody(f func(w http.ResponseWriter)) { b.body.Store(&f) }

// setupResolver serves a DID document for testKey(1) on a loopback HTTP server and returns a
// resolver pointed at it.
func setupResolver(t *testing.T) *resolverBundle {
	t.Helper()
	b := &resolverBundle{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != WellKnownDIDPath {
			http.NotFound(w, r)
			return
		}
		(*b.body.Load())(w)
	}))
	t.Cleanup(srv.Close)
	allowed, err := egress.ParseAllowed(strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	guard, err := egress.New(egress.Config{Allowed: allowed})
	require.NoError(t, err)
	t.Cleanup(guard.CloseIdleConnections)
	client := guard.Client()

	did, err := DIDWeb(srv.URL)
	require.NoError(t, err)
	b.did = did
	b.port = srv.Listener.Addr().(*net.TCPAddr).Port
	doc, err := NewDIDDocument(did, testKey(1).Public().(ed25519.PublicKey))
	require.NoError(t, err)
	docJSON, err := json.Marshal(doc)
	require.NoError(t, err)
	b.setBody(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/did+json")
		_, _ = w.Write(docJSON)
	})

	b.resolve, err = NewWebResolver(WebResolverConfig{Client: client, Scheme: "http"})
	require.NoError(t, err)
	return b
}

func TestWebResolverVerifiesThroughDIDWeb(t *testing.T) {
	t.Parallel()

	b := setupResolver(t)
	opts := ProofOptions{VerificationMethod: b.did + "#" + KeyID(testKey(1).Public().(ed25519.PublicKey))}
	signed, err := Sign(testAnchorCredential(t), testKey(1), opts)
	require.NoError(t, err)
	require.NoError(t, VerifyProof(t.Context(), signed, signed.Proofs()[0], b.resolve))
}

func TestWebResolverFailures(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		body func(w http.ResponseWriter)
		vm   func(did string) string
	}{
		"not found": {
			body: func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) },
		},
		"other DID's document": {
			body: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`{"id":"did:web:other.example"}`)) },
		},
		"oversized": {
			body: func(w http.ResponseWriter) { _, _ = w.Write([]byte(strings.Repeat(" ", MaxDocumentSize+1))) },
		},
		"garbage": {
			body: func(w http.ResponseWriter) { _, _ = w.Write([]byte(`<html>`)) },
		},
		"unknown key": {
			vm: func(did string) string { return did + "#other" },
		},
		"not did:web": {
			vm: func(string) string { return "did:key:z6Mkabc#z6Mkabc" },
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupResolver(t)
			if tc.body != nil {
				b.setBody(tc.body)
			}
			vm := b.did + "#" + KeyID(testKey(1).Public().(ed25519.PublicKey))
			if tc.vm != nil {
				vm = tc.vm(b.did)
			}
			_, err := b.resolve(t.Context(), vm)
			require.Error(t, err)
		})
	}
}

func TestNewWebResolverRejectsScheme(t *testing.T) {
	t.Parallel()

	_, err := NewWebResolver(WebResolverConfig{Scheme: "ftp", Client: http.DefaultClient})
	require.Error(t, err)
	_, err = NewWebResolver(WebResolverConfig{})
	require.ErrorContains(t, err, "outbound guard")
	resolve, err := NewWebResolver(WebResolverConfig{Client: http.DefaultClient})
	require.NoError(t, err)
	require.NotNil(t, resolve)
}

// TestWebResolverGoesThroughTheGuard: a did:web whose host is an address the outbound guard
// refuses is not fetched.
func TestWebResolverGoesThroughTheGuard(t *testing.T) {
	t.Parallel()
	b := setupResolver(t)
	other := fmt.Sprintf("did:web:127.0.0.2%%3A%d", b.port)
	_, err := b.resolve(t.Context(), other+"#key-1")
	require.ErrorIs(t, err, egress.ErrRefused, "127.0.0.2 is not the allowed 127.0.0.1")
}
