package explorer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/sidetree"
)

// pageServer serves the page and the explorer API on one mux, as the daemon does: the API's
// patterns must not conflict with the page's catch-all.
func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	routes, err := Routes()
	require.NoError(t, err)
	mux := http.NewServeMux()
	routes(mux)
	httpapi.ExplorerRoutes(httpapi.ExplorerConfig{Profile: sidetree.DefaultProfile()})(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, srv *httptest.Server, path string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestEveryViewServesTheIndex(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	for _, path := range []string{
		"/explorer/", "/explorer/did/did:sidetree:EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A", "/explorer/anchor/12",
		"/explorer/anchors?before=40", "/explorer/pipeline", "/explorer/federation", "/explorer/file/QmX", "/explorer/no/such/view",
	} {
		resp, body := fetch(t, srv, path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), path)
		require.Contains(t, body, `<script src="/explorer/assets/app.js" defer></script>`, path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"), path)
		require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), path)
	}
}

func TestAssets(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	for path, ct := range map[string]string{
		"/explorer/assets/app.js":    "text/javascript; charset=utf-8",
		"/explorer/assets/style.css": "text/css; charset=utf-8",
	} {
		resp, body := fetch(t, srv, path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Equal(t, ct, resp.Header.Get("Content-Type"), path)
		require.NotEmpty(t, body, path)
		etag := resp.Header.Get("ETag")
		require.NotEmpty(t, etag)
		require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))

		again, body := fetch(t, srv, path, http.Header{"If-None-Match": {etag}})
		require.Equal(t, http.StatusNotModified, again.StatusCode, "revalidation is a 304")
		require.Empty(t, body)
	}
	for _, path := range []string{"/explorer/assets/nope.js", "/explorer/assets/index.html"} {
		resp, _ := fetch(t, srv, path, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
}

func TestRoutesAroundThePage(t *testing.T) {
	t.Parallel()
	srv := pageServer(t)
	resp, _ := fetch(t, srv, "/explorer", nil)
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/explorer/", resp.Header.Get("Location"))

	// The API's own routes and its JSON 404 win over the page.
	resp, body := fetch(t, srv, "/explorer/api/federation", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"))
	require.Contains(t, body, `"enabled":false`)
	resp, body = fetch(t, srv, "/explorer/api/unknown", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, body, `"code":"not_found"`)

	// The page is read-only.
	post, err := http.Post(srv.URL+"/explorer/pipeline", "text/plain", nil)
	require.NoError(t, err)
	post.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, post.StatusCode)
}

// The page builds its DOM from data with textContent and attributes only: DID documents and
// batch files hold whatever their authors wrote.
func TestScriptNeverParsesDataAsMarkup(t *testing.T) {
	t.Parallel()
	data, err := assets.ReadFile("assets/app.js")
	require.NoError(t, err)
	for _, sink := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		require.NotContains(t, string(data), sink)
	}
}

// TestReadTokensGuardTheDataNotThePage uses the definitions the README gives: the page's files
// open, its data behind the read token.
func TestReadTokensGuardTheDataNotThePage(t *testing.T) {
	t.Parallel()
	auth, err := httpapi.ParseTokenAuth(`^/explorer/api/|read|,^/explorer/||,^/sidetree/v1/operations|read|write,.*|read|write`, "read=r3ad,write=wr1te")
	require.NoError(t, err)
	routes, err := Routes()
	require.NoError(t, err)
	mux := http.NewServeMux()
	routes(mux)
	httpapi.ExplorerRoutes(httpapi.ExplorerConfig{Profile: sidetree.DefaultProfile()})(mux)
	srv := httptest.NewServer(auth.Wrap(mux))
	t.Cleanup(srv.Close)

	for _, path := range []string{"/explorer/", "/explorer/did/did:sidetree:x", "/explorer/assets/app.js"} {
		resp, _ := fetch(t, srv, path, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s is open", path)
	}
	resp, _ := fetch(t, srv, "/explorer/api/federation", nil)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, _ = fetch(t, srv, "/explorer/api/federation", http.Header{"Authorization": {"Bearer wr1te"}})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a write token does not read")
	resp, _ = fetch(t, srv, "/explorer/api/federation", http.Header{"Authorization": {"Bearer r3ad"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
