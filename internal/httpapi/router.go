package httpapi

import "net/http"

// Router is where a component registers its routes: the server's ServeMux, through a recorder
// that remembers every pattern so that the route table can be checked against the OpenAPI
// document.
type Router interface {
	Handle(pattern string, handler http.Handler)
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// patternRecorder registers on a ServeMux and records the patterns.
type patternRecorder struct {
	mux      *http.ServeMux
	patterns []string
}

func (r *patternRecorder) Handle(pattern string, handler http.Handler) {
	r.patterns = append(r.patterns, pattern)
	r.mux.Handle(pattern, handler)
}

func (r *patternRecorder) HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request)) {
	r.patterns = append(r.patterns, pattern)
	r.mux.HandleFunc(pattern, handler)
}
