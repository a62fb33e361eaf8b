package trust

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClientConfigTrustsTheNamedAuthority(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	cfg, err := ClientConfig(ca)
	require.NoError(t, err)
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := trusting.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	def, err := ClientConfig("")
	require.NoError(t, err)
	require.Nil(t, def)
	_, err = (&http.Client{}).Get(srv.URL)
	require.ErrorContains(t, err, "certificate", "without the CA file the server is not trusted")

	empty := filepath.Join(t.TempDir(), "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("nothing"), 0o600))
	_, err = ClientConfig(empty)
	require.Error(t, err)
}
