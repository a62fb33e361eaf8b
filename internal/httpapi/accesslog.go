package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// accessLogMaxPath bounds the path written to the access log: a long-form DID in a path runs to
// kilobytes.
const accessLogMaxPath = 256

// accessLog logs one line per answered request (--access-log): what was asked, which route
// answered, the status and how long it took. It is off by default: at thousands of operations a
// second it would be most of the log.
func accessLog(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &accessRecorder{ResponseWriter: w}
		defer func() {
			path := r.URL.Path
			if len(path) > accessLogMaxPath {
				path = path[:accessLogMaxPath] + "…"
			}
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			logger.LogAttrs(r.Context(), slog.LevelInfo, "access",
				slog.String("method", r.Method), slog.String("path", path), slog.String("route", route),
				slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Duration("took", time.Since(start)), slog.String("remote", r.RemoteAddr))
		}()
		next.ServeHTTP(rec, r)
	})
}

// accessRecorder notes the status and the size of an answer.
type accessRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *accessRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *accessRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *accessRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
