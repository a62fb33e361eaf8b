package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTokenAuthRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ defs, tokens string }{
		"token without secret":       {"/x|a|", "a="},
		"undefined token name":       {"/x|a|b", "a=1"},
		"bad regex":                  {"/x(|a|", "a=1"},
		"too many fields":            {"/x|a|a|a", "a=1"},
		"empty pattern":              {"|a|", "a=1"},
		"token defined twice":        {"", "a=1,a=2"},
		"token without name or sign": {"", "secret"},
	} {
		_, err := ParseTokenAuth(c.defs, c.tokens)
		require.Error(t, err, name)
	}
	a, err := ParseTokenAuth("", "")
	require.NoError(t, err)
	name, err := a.Authorize(httptest.NewRequest(http.MethodPost, "/sidetree/v1/operations", nil))
	require.NoError(t, err, "no definitions: open")
	require.Empty(t, name)
}

// TestTokenAuthPerEndpoint uses Orb's shape of definitions: operations need the write token to
// post and the read token to resolve; CAS reads are open; everything else needs admin.
func TestTokenAuthPerEndpoint(t *testing.T) {
	t.Parallel()
	a, err := ParseTokenAuth(
		`^/sidetree/v1/operations|read&admin|write&admin, ^/sidetree/v1/identifiers|read&admin|, ^/cas/||, .*|admin|admin`,
		"read=r3ad,write=wr1te,admin=adm1n")
	require.NoError(t, err)
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(TokenName(r.Context())))
	}))
	for _, c := range []struct {
		method, path, header string
		code                 int
		token                string
	}{
		{http.MethodPost, "/sidetree/v1/operations", "Bearer wr1te", 200, "write"},
		{http.MethodPost, "/sidetree/v1/operations", "bearer ADM1N", 401, ""},
		{http.MethodPost, "/sidetree/v1/operations", "BEARER adm1n", 200, "admin"},
		{http.MethodPost, "/sidetree/v1/operations", "Bearer r3ad", 401, ""},
		{http.MethodPost, "/sidetree/v1/operations", "", 401, ""},
		{http.MethodPost, "/sidetree/v1/operations", "Basic d3IxdGU=", 401, ""},
		{http.MethodGet, "/sidetree/v1/identifiers/did:sidetree:x", "Bearer r3ad", 200, "read"},
		{http.MethodGet, "/sidetree/v1/identifiers/did:sidetree:x", "Bearer wr1te", 401, ""},
		{http.MethodGet, "/sidetree/v1/identifiers/did:sidetree:x", "", 401, ""},
		{http.MethodGet, "/cas/QmX", "", 200, ""},
		{http.MethodGet, "/metrics", "Bearer r3ad", 401, ""},
		{http.MethodGet, "/metrics", "Bearer adm1n", 200, "admin"},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, c.code, rec.Code, "%s %s with %q", c.method, c.path, c.header)
		if c.code == http.StatusUnauthorized {
			require.Equal(t, "unauthorized", errorCode(t, rec.Body.Bytes()))
			require.NotEmpty(t, rec.Header().Get("WWW-Authenticate"))
			continue
		}
		require.Equal(t, c.token, rec.Body.String(), "the handler learns which token allowed the request")
	}
}
