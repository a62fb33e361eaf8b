package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Routes: VersionRoutes(VersionInfo{
		Info:     buildinfo.Info{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26.8"},
		Protocol: ProtocolInfo{SidetreeVersion: "1.0", DIDMethod: "ion", MaxOperationCount: 10_000, BatchWriterTimeout: "2s"},
	})})
	status, body := get(t, b.base+"/version")
	require.Equal(t, http.StatusOK, status)
	var got map[string]any
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, "anchord", got["name"])
	require.Equal(t, "v1.2.3", got["version"])
	require.Equal(t, "abc", got["revision"])
	require.Equal(t, "go1.26.8", got["goVersion"])
	protocol := got["protocol"].(map[string]any)
	require.Equal(t, "ion", protocol["didMethod"])
	require.InDelta(t, 10_000, protocol["maxNumberOfOperationsPerBatch"], 0)
}
