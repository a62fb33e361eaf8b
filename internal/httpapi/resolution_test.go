package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNegotiate(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]representation{
		"":                    repDefault,
		"*/*":                 repDefault,
		"application/json":    repDefault,
		"application/ld+json": repDefault,
		mediaResolution:       repResolution,
		`application/ld+json; profile="https://w3id.org/did-resolution/"`: repResolution,
		"application/did-resolution":                                      repResolution,
		mediaDIDLD:                                                        repDocumentLD,
		mediaDIDJSON:                                                      repDocumentJSON,
		"application/did":                                                 repDocumentJSON,
		"text/html, application/did+ld+json;q=0.9, */*;q=0.1":                                     repDocumentLD,
		"application/did+ld+json;q=0.5, " + mediaResolution:                                       repResolution,
		"*/*, application/did+ld+json":                                                            repDocumentLD,
		`application/ld+json;profile="https://w3id.org/did-resolution";q=0, application/did+json`: repDocumentJSON,
		`application/ld+json;profile="a,b", application/did+ld+json`:                              repDocumentLD,
	} {
		got, ok := negotiate(accept)
		require.True(t, ok, accept)
		require.Equal(t, want, got, accept)
	}
	for _, accept := range []string{"text/html", "image/png, text/plain;q=0.5", "application/did+ld+json;q=0", "application/did+ld+json;q=7"} {
		_, ok := negotiate(accept)
		require.False(t, ok, accept)
	}
}

func getWith(t *testing.T, url, accept string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b json.RawMessage
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return resp, b
}

// TestSidetreeResolutionContentNegotiation: the Sidetree path answers with the reference
// implementation's result unless asked otherwise; the DID Resolution profile adds resolution
// metadata; application/did+ld+json and application/did+json give the document alone.
func TestSidetreeResolutionContentNegotiation(t *testing.T) {
	t.Parallel()
	url := sidetreeServer(t, 4096) + "/sidetree/v1/identifiers/did:sidetree:found"

	resp, body := getWith(t, url, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, mediaDIDLD, resp.Header.Get("Content-Type"), "as the reference implementation")
	require.JSONEq(t, `{"@context":"https://w3id.org/did-resolution/v1","didDocument":{"id":"did:sidetree:found"},"didDocumentMetadata":{"method":{"published":true}}}`, string(body))
	require.Equal(t, "Accept", resp.Header.Get("Vary"))

	resp, body = getWith(t, url, mediaResolution)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, mediaResolution, resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"@context":"https://w3id.org/did-resolution/v1","didDocument":{"id":"did:sidetree:found"},"didDocumentMetadata":{"versionId":"","method":{"published":true}},"didResolutionMetadata":{"contentType":"application/did+ld+json"}}`, string(body))

	for _, media := range []string{mediaDIDLD, mediaDIDJSON} {
		resp, body = getWith(t, url, media)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, media, resp.Header.Get("Content-Type"))
		require.JSONEq(t, `{"id":"did:sidetree:found"}`, string(body))
	}

	resp, body = getWith(t, url, "text/html")
	require.Equal(t, http.StatusNotAcceptable, resp.StatusCode)
	require.Equal(t, "representation_not_supported", errorCode(t, body))

	resp, body = getWith(t, url+"?versionId=v7", mediaDIDLD+";q=0.1, "+mediaResolution)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `"versionId":"v7"`)
	resp, body = getWith(t, url+"?versionTime=2026-01-02T03:04:05%2B01:00", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `"versionId":"2026-01-02T02:04:05Z"`, "a version asked for brings the metadata")
	resp, body = getWith(t, url+"?versionId=missing", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "version_not_found", errorCode(t, body))
	for _, q := range []string{"versionTime=yesterday", "versionTime=2026-01-02", "versionId=a&versionTime=2026-01-02T03:04:05Z"} {
		resp, body = getWith(t, url+"?"+q, "")
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
		require.Equal(t, "invalid_parameter", errorCode(t, body))
	}

	resp, body = getWith(t, sidetreeServer(t, 4096)+"/sidetree/v1/identifiers/did:sidetree:gone", mediaDIDLD)
	require.Equal(t, http.StatusGone, resp.StatusCode)
	require.JSONEq(t, `{"id":"did:sidetree:gone"}`, string(body))
}

// TestOrbResultsForDIDLD: in the did:orb profile the Sidetree path answers
// application/did+ld+json with the whole resolution result, as Orb's server does, because Orb's
// resolver asks another domain for a DID with that media type and reads a resolution result;
// Orb answers every Accept so (orb.go), and the Universal Resolver path is unchanged.
func TestOrbResultsForDIDLD(t *testing.T) {
	t.Parallel()
	base := sidetreeServerWith(t, 4096, func(c *SidetreeConfig) { c.Orb = true })
	resp, body := getWith(t, base+"/sidetree/v1/identifiers/did:sidetree:found", mediaDIDLD)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, mediaDIDLD, resp.Header.Get("Content-Type"), "Orb's resolver requires it")
	require.JSONEq(t, `{"@context":"https://w3id.org/did-resolution/v1","didDocument":{"id":"did:sidetree:found"},"didDocumentMetadata":{"method":{"published":true}}}`, string(body))
	resp, body2 := getWith(t, base+"/sidetree/v1/identifiers/did:sidetree:found", mediaDIDJSON)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, string(body), string(body2), "whatever the Accept")
	resp, body = getWith(t, base+"/1.0/identifiers/did:sidetree:found", mediaDIDLD)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.JSONEq(t, `{"id":"did:sidetree:found"}`, string(body))
}

// TestUniversalResolverDriverPath checks GET /1.0/identifiers/{did} against the Universal
// Resolver driver contract: the status code and media type of every outcome, and errors as
// resolution results naming DID Resolution's error.
func TestUniversalResolverDriverPath(t *testing.T) {
	t.Parallel()
	base := sidetreeServer(t, 4096) + "/1.0/identifiers/"
	for _, tc := range []struct {
		did, accept string
		status      int
		media       string
		errName     string
	}{
		{"did:sidetree:found", "", http.StatusOK, mediaResolution, ""},
		// What the Universal Resolver sends its drivers.
		{"did:sidetree:found", "application/ld+json", http.StatusOK, mediaResolution, ""},
		{"did:sidetree:found", mediaResolution, http.StatusOK, mediaResolution, ""},
		{"did:sidetree:found", mediaDIDLD, http.StatusOK, mediaDIDLD, ""},
		{"did:sidetree:found", mediaDIDJSON, http.StatusOK, mediaDIDJSON, ""},
		{"did:sidetree:gone", "", http.StatusGone, mediaResolution, ""},
		{"did:sidetree:gone", mediaDIDLD, http.StatusGone, mediaDIDLD, ""},
		{"did:sidetree:missing", "", http.StatusNotFound, mediaResolution, "notFound"},
		{"did:sidetree:found?versionId=missing", "", http.StatusNotFound, mediaResolution, "notFound"},
		{"did:sidetree:invalid", "", http.StatusBadRequest, mediaResolution, "invalidDid"},
		{"not-a-did", "", http.StatusBadRequest, mediaResolution, "invalidDid"},
		{"did:ion:EiAbc", "", http.StatusNotImplemented, mediaResolution, "methodNotSupported"},
		{"did:sidetree:found", "text/html", http.StatusNotAcceptable, mediaResolution, "representationNotSupported"},
		{"did:sidetree:found?versionTime=soon", "", http.StatusBadRequest, mediaResolution, "invalidOptions"},
		{"did:sidetree:dberror", "", http.StatusInternalServerError, mediaResolution, "internalError"},
	} {
		resp, body := getWith(t, base+tc.did, tc.accept)
		require.Equal(t, tc.status, resp.StatusCode, "%s %s: %s", tc.did, tc.accept, body)
		require.Equal(t, tc.media, resp.Header.Get("Content-Type"), tc.did)
		var result struct {
			Context  string          `json:"@context"`
			Document json.RawMessage `json:"didDocument"`
			Meta     struct {
				Error       string `json:"error"`
				ContentType string `json:"contentType"`
			} `json:"didResolutionMetadata"`
		}
		require.NoError(t, json.Unmarshal(body, &result))
		switch {
		case tc.errName != "":
			require.Equal(t, tc.errName, result.Meta.Error, tc.did)
			require.Equal(t, "null", string(result.Document))
			require.Equal(t, resolutionContext, result.Context)
		case tc.media == mediaResolution:
			require.Equal(t, mediaDIDLD, result.Meta.ContentType)
			require.NotEmpty(t, result.Document)
		default:
			require.Contains(t, string(body), `"id":"did:sidetree:`, "the document alone")
		}
	}
}

// FuzzNegotiate: any Accept header gives an answer, never a panic, and an accepted header
// names one of the representations.
func FuzzNegotiate(f *testing.F) {
	for _, seed := range []string{"", "*/*", mediaResolution, `application/ld+json;profile="a,b\"c";q=0.5, application/did+json`, "text/html;q=abc", `"`, ";;,,", "application/did+ld+json;q=1e400"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		rep, ok := negotiate(accept)
		if ok {
			require.Contains(t, []representation{repDefault, repResolution, repDocumentLD, repDocumentJSON}, rep)
		}
		require.NotEmpty(t, splitMediaRanges(accept))
	})
}
