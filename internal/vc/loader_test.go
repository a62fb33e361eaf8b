package vc

import (
	"errors"
	"testing"

	"github.com/piprate/json-gold/ld"
	"github.com/stretchr/testify/require"
)

func TestLoaderServesEmbeddedContexts(t *testing.T) {
	t.Parallel()

	urls := ContextURLs()
	require.ElementsMatch(t, []string{
		ContextCredentialsV1, ContextActivityAnchorsV1, ContextSecurityV1, ContextSecurityV2,
		ContextEd25519Signature2020,
	}, urls)
	for _, u := range urls {
		doc, err := Loader{}.LoadDocument(u)
		require.NoError(t, err, u)
		require.Equal(t, u, doc.DocumentURL)
		m, ok := doc.Document.(map[string]any)
		require.True(t, ok, u)
		require.Contains(t, m, "@context", u)
	}
}

func TestLoaderRefusesUnknownContexts(t *testing.T) {
	t.Parallel()

	for _, u := range []string{
		"https://www.w3.org/ns/activitystreams",
		"https://www.w3.org/2018/credentials/v1/",
		"http://www.w3.org/2018/credentials/v1",
		"https://w3id.org/security/suites/ed25519-2020/v1#",
		"",
		"file:///etc/passwd",
	} {
		_, err := Loader{}.LoadDocument(u)
		require.ErrorIs(t, err, ErrUnknownContext, u)
	}
}

// A document naming a context that is not embedded fails during processing, with the loader's
// error, rather than reaching for the network.
func TestCanonicalizeUnknownContextFailsWithoutNetwork(t *testing.T) {
	t.Parallel()

	doc := map[string]any{
		"@context": []any{ContextCredentialsV1, "https://example.invalid/ctx/v1"},
		"type":     "VerifiableCredential",
	}
	_, err := canonicalize(doc)
	require.ErrorIs(t, err, ErrUnknownContext)

	var ldErr *ld.JsonLdError
	require.True(t, errors.As(err, &ldErr))
	require.Equal(t, ld.LoadingRemoteContextFailed, ldErr.Code)
}

// json-gold writes into the map an @import names; each load must hand out a private copy so
// that one document cannot change what the next one sees.
func TestLoaderHandsOutCopies(t *testing.T) {
	t.Parallel()

	first, err := Loader{}.LoadDocument(ContextActivityAnchorsV1)
	require.NoError(t, err)
	ctx := first.Document.(map[string]any)["@context"].(map[string]any)
	ctx["injected"] = "https://evil.example/#x"
	delete(ctx, "AnchorLink")

	second, err := Loader{}.LoadDocument(ContextActivityAnchorsV1)
	require.NoError(t, err)
	ctx2 := second.Document.(map[string]any)["@context"].(map[string]any)
	require.NotContains(t, ctx2, "injected")
	require.Contains(t, ctx2, "AnchorLink")
}
