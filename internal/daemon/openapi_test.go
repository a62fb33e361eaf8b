package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/buildinfo"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// TestOpenAPIDocumentsEveryRoute assembles the embedded daemon (the shape that serves every
// public route) with the witness log on, takes the patterns its HTTP server registered, and requires each in the
// OpenAPI document with its method, and each documented operation to be served. The document
// must validate.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(ctx))

	cfg := config.Default()
	cfg.HostURL = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.WitnessLog.Enabled = true
	logger := anchordtest.Logger(t)
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: cfg.DataDir, Logger: logger})
	require.NoError(t, err)
	sup := &supervisor{logger: logger, timeout: cfg.ShutdownTimeout}
	sup.onStop(StageDatabase, "store", st.Close)
	srv, err := assemble(ctx, cfg, st, logger, prometheus.NewRegistry(), sup, buildinfo.Read("", ""))
	require.NoError(t, err)
	patterns := srv.Patterns()
	// Start and stop at once: the listener and the store close in the ordered shutdown.
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, sup.run(runCtx))

	require.GreaterOrEqual(t, len(patterns), 9, "the route table was recorded")
	served := map[string]bool{}
	for _, p := range patterns {
		method, path, ok := strings.Cut(p, " ")
		require.True(t, ok, "route %q has no method: the document cannot describe it", p)
		served[strings.ToLower(method)+" "+path] = true
		item := doc.Paths.Value(path)
		require.NotNil(t, item, "route %q is not in the OpenAPI document (internal/httpapi/openapi.json)", p)
		require.NotNil(t, item.GetOperation(method), "route %q: the OpenAPI document has the path but not the method", p)
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			require.True(t, served[strings.ToLower(method)+" "+path], "the OpenAPI document has %s %s, which no route serves", method, path)
		}
	}
}
