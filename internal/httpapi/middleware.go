package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// statusWriter records the status code written by a handler.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument wraps the mux with the body size limit, panic recovery and request metrics. The
// route label is the matched ServeMux pattern, so metric cardinality is bounded by the route
// table, not by DIDs in paths.
func instrument(mux *http.ServeMux, m *metrics, logger *slog.Logger, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		sw := &statusWriter{ResponseWriter: w}

		defer func() {
			// ServeMux records the matched pattern on the request it dispatched (this one).
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				logger.ErrorContext(r.Context(), "handler panic", "route", route, "panic", p)
				if sw.code == 0 {
					WriteError(sw, http.StatusInternalServerError, "internal_error", "internal error")
				}
			}
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			m.requests.WithLabelValues(route, r.Method, strconv.Itoa(code)).Inc()
			m.latency.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
		}()
		mux.ServeHTTP(sw, r)
	})
}
