package federation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDIDOrbEndpoints: in the did:orb profile a domain names its Sidetree endpoints at
// /.well-known/did-orb and answers WebFinger about them as Orb does (the resolution endpoint
// with min-resolvers, which Orb's client requires), which is how Orb's resolver finds where to
// resolve a DID at its anchor origin. Without the profile neither is served.
func TestDIDOrbEndpoints(t *testing.T) {
	t.Parallel()
	d := newDomain(t)
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(d.srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	finger := func(resource string) string { return "/.well-known/webfinger?resource=" + url.PathEscape(resource) }
	base := d.svc.Endpoint()

	code, _ := get(WellKnownDIDOrbPath)
	require.Equal(t, http.StatusNotFound, code)
	code, _ = get(finger(base + ResolutionPath))
	require.Equal(t, http.StatusNotFound, code)

	d.svc.RegisterDIDInfo(func(context.Context, string) (DIDInfo, bool, error) { return DIDInfo{}, false, nil })
	code, body := get(WellKnownDIDOrbPath)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"resolutionEndpoint":"`+base+`/sidetree/v1/identifiers","operationEndpoint":"`+base+`/sidetree/v1/operations"}`, string(body))

	// Orb asks with the endpoint path-escaped, as its client does.
	code, body = get(finger(base + ResolutionPath))
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"subject":"`+base+`/sidetree/v1/identifiers","properties":{"https://trustbloc.dev/ns/min-resolvers":1},"links":[{"rel":"self","href":"`+base+`/sidetree/v1/identifiers"}]}`, string(body))
	code, body = get(finger(base + OperationPath))
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"subject":"`+base+`/sidetree/v1/operations","links":[{"rel":"self","href":"`+base+`/sidetree/v1/operations"}]}`, string(body))
	code, _ = get(finger("https://elsewhere.example" + ResolutionPath))
	require.Equal(t, http.StatusNotFound, code)
}
