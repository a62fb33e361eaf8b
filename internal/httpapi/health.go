package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"
)

// CheckFunc reports whether a dependency is usable; nil means up.
type CheckFunc func(ctx context.Context) error

// HealthReport is the body of /healthcheck.
type HealthReport struct {
	Status string                 `json:"status"`
	Time   time.Time              `json:"time"`
	Checks map[string]CheckReport `json:"checks"`
}

// CheckReport is one dependency's state.
type CheckReport struct {
	Status    string  `json:"status"`
	Error     string  `json:"error,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
}

type healthHandler struct {
	checks  map[string]CheckFunc
	timeout time.Duration
	logger  *slog.Logger
}

// ServeHTTP runs every check concurrently, each under the health timeout, and answers 200 when
// all are up and 503 when any is down. A failed check's error goes to the log, not the body: it
// names internal addresses ("dial tcp 10.0.0.5:5432"), users and databases, and /healthcheck is
// public.
func (h *healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	names := make([]string, 0, len(h.checks))
	for n := range h.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	reports := make([]CheckReport, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
			defer cancel()
			start := time.Now()
			err := h.checks[n](ctx)
			rep := CheckReport{Status: "up", LatencyMS: float64(time.Since(start).Microseconds()) / 1000}
			switch {
			case err == nil:
			case ctx.Err() != nil:
				rep.Status, rep.Error = "down", "no answer within "+h.timeout.String()
			default:
				rep.Status, rep.Error = "down", "check failed; see the server log"
			}
			if err != nil {
				h.logger.WarnContext(r.Context(), "health check failed", "check", n, "error", err)
			}
			reports[i] = rep
		})
	}
	wg.Wait()

	out := HealthReport{Status: "up", Time: time.Now().UTC(), Checks: make(map[string]CheckReport, len(names))}
	status := http.StatusOK
	for i, n := range names {
		out.Checks[n] = reports[i]
		if reports[i].Status != "up" {
			out.Status, status = "down", http.StatusServiceUnavailable
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, out)
}
