package daemon

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

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
// public route) with the witness log and the tlog-witness on, takes the patterns its HTTP server registered, and requires each in the
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
	cfg.Cosigner.Enabled = true
	logger := anchordtest.Logger(t)
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: cfg.DataDir, Logger: logger})
	require.NoError(t, err)
	sup := &supervisor{logger: logger, timeout: cfg.ShutdownTimeout}
	sup.onStop(StageDatabase, "store", st.Close)
	lns, err := listen(cfg)
	require.NoError(t, err)
	gate := newStartGate(logger, lns.api, lns.admin)
	srv, err := assemble(ctx, cfg, st, logger, prometheus.NewRegistry(), sup, buildinfo.Read("", ""), lns, gate)
	require.NoError(t, err)
	require.NoError(t, gate.handOver(time.Second))
	patterns := srv.Patterns()
	// Start and stop at once: the listener and the store close in the ordered shutdown.
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, sup.run(runCtx))

	require.GreaterOrEqual(t, len(patterns), 9, "the route table was recorded")
	// Routes and documented paths are compared by shape: the names of their wildcards may
	// differ, since a Go wildcard's "..." (the rest of the path) is no OpenAPI name.
	documented := map[string]string{}
	for path := range doc.Paths.Map() {
		documented[pathShape(path)] = path
	}
	served := map[string]bool{}
	for _, p := range patterns {
		method, route, ok := strings.Cut(p, " ")
		require.True(t, ok, "route %q has no method: the document cannot describe it", p)
		path, ok := documented[pathShape(route)]
		require.True(t, ok, "route %q is not in the OpenAPI document (internal/httpapi/openapi.json)", p)
		served[strings.ToLower(method)+" "+path] = true
		require.NotNil(t, doc.Paths.Value(path).GetOperation(method), "route %q: the OpenAPI document has the path but not the method", p)
	}
	for path, item := range doc.Paths.Map() {
		require.NotContains(t, path, "...", "%s: a Go wildcard in an OpenAPI path", path)
		for method := range item.Operations() {
			require.True(t, served[strings.ToLower(method)+" "+path], "the OpenAPI document has %s %s, which no route serves", method, path)
		}
	}
}

// wildcard is a path template's variable, in Go's syntax ({n...}) or OpenAPI's ({index}).
var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// pathShape is a route or documented path with its wildcards' names left out.
func pathShape(path string) string { return wildcard.ReplaceAllString(path, "{}") }
