package httpapi

import (
	"net/http"
	"net/http/pprof"
)

// DebugRoutes registers Go's profiling endpoints (for the admin listener only). The command
// line (/debug/pprof/cmdline) is not served: it shows every flag, secrets included.
func DebugRoutes(mux Router) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/pprof/cmdline", http.NotFound)
}
