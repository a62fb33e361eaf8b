package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/ratelimit"
)

// Label values of the request metrics besides the registered patterns and standard methods.
const (
	routeUnmatched = "unmatched" // no pattern matched: the router's own 404, 405 or redirect
	routeLimited   = "limited"   // refused by a limit before routing
	routeOther     = "other"     // beyond maxRouteLabels distinct patterns
	methodOther    = "other"     // any method outside RFC 9110's and PATCH
)

// maxRouteLabels bounds the distinct route label values: far above any route table of ours, so
// reaching it means something other than a registered pattern became a label.
const maxRouteLabels = 256

// front is the server's handler: it applies the limits, bounds the body, recovers panics and
// records the request metrics around the mux. Every label value comes from a fixed set (the
// standard methods, the registered patterns, status codes a handler wrote), so no request can
// add series: a made-up method or path must not cost memory that is never freed.
type front struct {
	mux *http.ServeMux
	// next serves the request: the mux, behind the server's Guard if it has one.
	next    http.Handler
	m       *metrics
	logger  *slog.Logger
	maxBody int64
	// pathBody holds the body limits of paths that differ from maxBody.
	pathBody map[string]int64
	rate     *ratelimit.Keyed // nil: no rate limit
	routes   routeLabels
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	f.m.inFlight.Inc()
	defer f.m.inFlight.Dec()
	sw := &statusWriter{ResponseWriter: w, req: r, mux: f.mux}
	route := ""
	defer func() {
		if route == "" {
			// ServeMux records the matched pattern on the request it dispatched (this one); a
			// request the guard refused never reached it, so ask the mux which it would be.
			if r.Pattern == "" {
				_, r.Pattern = f.mux.Handler(r)
			}
			route = f.routes.of(r)
		}
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			f.logger.ErrorContext(r.Context(), "handler panic", "route", route, "panic", p)
			if sw.code == 0 {
				WriteError(sw, http.StatusInternalServerError, "internal_error", "internal error")
			}
		}
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		f.m.observe(route, methodLabel(r.Method), code, time.Since(start).Seconds())
	}()

	if overCap(r) {
		route = routeLimited
		f.m.rejected.WithLabelValues(rejectConnections).Inc()
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		// 429, as for the rate limit: the client should slow down and come back; Retry-After
		// says when.
		WriteError(sw, http.StatusTooManyRequests, "too_many_connections", "the server is at its connection limit; retry later")
		return
	}
	if f.rate != nil {
		if ok, wait := f.rate.Allow(clientKey(r.RemoteAddr)); !ok {
			route = routeLimited
			f.m.rejected.WithLabelValues(rejectRate).Inc()
			w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
			WriteError(sw, http.StatusTooManyRequests, "rate_limited", "too many requests from this client; retry later")
			return
		}
	}
	limit := f.maxBody
	if n, ok := f.pathBody[r.URL.Path]; ok {
		limit = n
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	f.next.ServeHTTP(sw, r)
}

// codeLabels are the labels of the status codes 100 to 599: strconv.Itoa allocates each one
// above 99 anew, on every request.
var codeLabels = func() (l [500]string) {
	for i := range l {
		l[i] = strconv.Itoa(100 + i)
	}
	return l
}()

// codeLabel is strconv.Itoa(code), without an allocation for a status code.
func codeLabel(code int) string {
	if code >= 100 && code < 600 {
		return codeLabels[code-100]
	}
	return strconv.Itoa(code)
}

// methodLabel maps a method to its label: a client may send any token as a method.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return method
	}
	return methodOther
}

// routeLabels is the set of patterns seen as route labels.
type routeLabels struct {
	mu   sync.RWMutex
	seen map[string]struct{}
}

// of returns the route label of a request the mux has dispatched.
func (l *routeLabels) of(r *http.Request) string {
	p := r.Pattern
	if p == "" {
		return routeUnmatched
	}
	l.mu.RLock()
	_, known := l.seen[p]
	n := len(l.seen)
	l.mu.RUnlock()
	if known {
		return p
	}
	// ServeMux sets Pattern to a registered pattern, except after the trailing-slash redirect
	// of a CONNECT request, where it is the redirect's path (the client's); that one is never
	// learnt.
	if r.Method == http.MethodConnect {
		return routeUnmatched
	}
	if n >= maxRouteLabels {
		return routeOther
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) >= maxRouteLabels {
		return routeOther
	}
	if l.seen == nil {
		l.seen = make(map[string]struct{})
	}
	l.seen[p] = struct{}{}
	return p
}

// statusWriter records the status code written by a handler, and gives the router's own 404 and
// 405 the JSON body every other error has.
type statusWriter struct {
	http.ResponseWriter
	req     *http.Request
	mux     *http.ServeMux
	code    int
	replace bool // the router's plain-text body is being dropped
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code != 0 {
		w.ResponseWriter.WriteHeader(code) // superfluous: net/http reports it
		return
	}
	w.code = code
	if w.req.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		// The mux records the pattern it matched on the request it dispatched, and a guard
		// hands it a copy of this one: ask the mux, or a route's own 404 would lose its body.
		_, w.req.Pattern = w.mux.Handler(w.req)
	}
	// No pattern matched, so the mux itself is answering (http.Error, text/plain).
	if w.req.Pattern == "" && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		w.replace = true
		w.Header().Del("X-Content-Type-Options")
		msg := "no route for this path"
		if code == http.StatusMethodNotAllowed {
			msg = "method not allowed for this path; see the Allow header"
		}
		WriteError(w.ResponseWriter, code, statusCode(code), msg)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.replace {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusCode is the error code of the router's own answers.
func statusCode(status int) string {
	if status == http.StatusMethodNotAllowed {
		return "method_not_allowed"
	}
	return "not_found"
}
