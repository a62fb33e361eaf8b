package httpapi

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

// LoadOpenAPI parses and validates the OpenAPI document with kin-openapi.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI())
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "the OpenAPI document validates")
	return doc
}

func TestOpenAPIServedAndValid(t *testing.T) {
	t.Parallel()
	loadOpenAPI(t)
	b := setup(t, Config{Routes: OpenAPIRoutes()})
	status, body := get(t, b.base+"/openapi.json")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, OpenAPI(), body)
}

// TestOpenAPIListsEveryErrorCode reads the codes out of the sources that define or write them
// (the sidetree and intake codes, and every WriteError of this package) and requires each in
// the document's ErrorCode enum, whose table says what the code means.
func TestOpenAPIListsEveryErrorCode(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	var documented []string
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		documented = append(documented, v.(string))
	}
	defined := regexp.MustCompile(`\bCode = "([a-z0-9_]+)"`)
	written := regexp.MustCompile(`WriteError\([a-z]+, http\.Status[A-Za-z]+, "([a-z0-9_]+)"`)
	all, err := filepath.Glob("*.go")
	require.NoError(t, err)
	// The routes of other packages on the API listener: the witness log's and /vc/{id}.
	files := []string{"../sidetree/error.go", "../intake/intake.go", "../witnesslog/handler.go", "../daemon/witness.go"}
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	found := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, re := range []*regexp.Regexp{defined, written} {
			for _, m := range re.FindAllSubmatch(src, -1) {
				found++
				require.Contains(t, documented, string(m[1]), "%s: code %s is not in the OpenAPI document's ErrorCode table", f, m[1])
			}
		}
	}
	require.Greater(t, found, 40, "the code definitions were found")
	require.True(t, slices.Contains(documented, "queueing_multiple_operations_per_did_not_allowed"))
	require.Contains(t, doc.Info.Description, "| `jws_failed_signature_validation` | 400 |")
}
