package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI document of every public route. It is kept by hand; the daemon's test
// fails when a registered route is missing from it, and this package's test when it does not
// validate or misses an error code.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI document (callers must not modify it).
func OpenAPI() []byte { return openAPI }

// OpenAPIRoutes returns the registration of GET /openapi.json.
func OpenAPIRoutes() func(mux Router) {
	return func(mux Router) {
		mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(openAPI)
		})
	}
}
