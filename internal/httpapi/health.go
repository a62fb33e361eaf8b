package httpapi

import (
	"context"
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
}

// ServeHTTP runs every check concurrently, each under the health timeout, and answers 200 when
// all are up and 503 when any is down.
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
			if err != nil {
				rep.Status, rep.Error = "down", err.Error()
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
