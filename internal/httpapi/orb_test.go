package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// orbServer is sidetreeServer in the did:orb profile.
func orbServer(t *testing.T) string {
	t.Helper()
	return sidetreeServerWith(t, 4096, func(c *SidetreeConfig) { c.Orb = true })
}

// requireText checks an Orb-style answer: status, Content-Type and the whole text.
func requireText(t *testing.T, resp *http.Response, body []byte, status int, contentType, text string) {
	t.Helper()
	require.Equal(t, status, resp.StatusCode, string(body))
	require.Equal(t, contentType, resp.Header.Get("Content-Type"))
	require.Equal(t, text, string(body))
}

func TestOrbOperationAnswers(t *testing.T) {
	t.Parallel()
	url := orbServer(t) + "/sidetree/v1/operations"

	resp, body := do(t, http.MethodPost, url, "create")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/did+ld+json", resp.Header.Get("Content-Type"))
	require.JSONEq(t, `{"didDocument":{}}`, string(body))

	resp, body = do(t, http.MethodPost, url, "update")
	requireText(t, resp, body, http.StatusOK, "application/did+ld+json", "null\n")

	resp, body = do(t, http.MethodPost, url, "bad")
	requireText(t, resp, body, http.StatusBadRequest, "text/plain", "bad request: signature does not verify")

	resp, body = do(t, http.MethodPost, url, "echo"+strings.Repeat("z", 4000))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.LessOrEqual(t, len(body), MaxMessageBytes, "messages are bounded in text too")
	require.True(t, strings.HasPrefix(string(body), "bad request: bad value echo"))

	resp, body = do(t, http.MethodPost, url, strings.Repeat("x", 5000))
	requireText(t, resp, body, http.StatusBadRequest, "text/plain", "bad request: operation size[5000] exceeds maximum operation size[2500]")

	resp, body = do(t, http.MethodPost, url, "full")
	requireText(t, resp, body, http.StatusServiceUnavailable, "text/plain", "operation not accepted; retry later")
	require.Equal(t, "2", resp.Header.Get("Retry-After"))

	resp, body = do(t, http.MethodPost, url, "anything else")
	requireText(t, resp, body, http.StatusInternalServerError, "text/plain", "internal error")
}

func TestOrbResolutionAnswers(t *testing.T) {
	t.Parallel()
	base := orbServer(t) + "/sidetree/v1/identifiers/"
	get := func(path, accept string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		require.NoError(t, err)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b strings.Builder
		_, err = io.Copy(&b, resp.Body)
		require.NoError(t, err)
		return resp, []byte(b.String())
	}

	// Whatever the Accept (Orb's clients send application/did+ld+json), the resolution result.
	for _, accept := range []string{"", "application/did+ld+json", "application/did+json", "application/xml"} {
		resp, body := get("did:sidetree:found", accept)
		require.Equal(t, http.StatusOK, resp.StatusCode, accept)
		require.Equal(t, "application/did+ld+json", resp.Header.Get("Content-Type"), accept)
		require.Contains(t, string(body), `"didDocumentMetadata"`, accept)
		require.Empty(t, resp.Header.Get("Vary"))
	}
	resp, body := get("did:sidetree:gone", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "a deactivated DID, as Orb answers it")
	require.Contains(t, string(body), `"deactivated":true`)

	resp, body = get("did:sidetree:missing", "")
	requireText(t, resp, body, http.StatusNotFound, "text/plain", "document not found")
	resp, body = get("did:sidetree:malformed", "")
	requireText(t, resp, body, http.StatusNotFound, "text/plain", "document not found")
	resp, body = get("not-a-did", "")
	requireText(t, resp, body, http.StatusBadRequest, "text/plain", "did method not supported for id[not-a-did]")
	resp, body = get("did:sidetree:found?versionId=x&versionTime=2020-01-01T00:00:00Z", "")
	requireText(t, resp, body, http.StatusBadRequest, "text/plain", "cannot specify both 'versionId' and 'versionTime'")
	resp, body = get("did:sidetree:dberror", "")
	requireText(t, resp, body, http.StatusServiceUnavailable, "text/plain", "resolution unavailable")
}

func TestOrbCASAnswers(t *testing.T) {
	t.Parallel()
	base := orbServer(t)
	resp, body := do(t, http.MethodGet, base+"/cas/QmHere", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []byte{1, 2, 3}, body)
	for _, cid := range []string{"QmGone", "nonsense"} {
		resp, body = do(t, http.MethodGet, base+"/cas/"+cid, "")
		requireText(t, resp, body, http.StatusNotFound, "text/plain; charset=utf-8", "no content at "+cid+" was found: content not found")
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}
}
