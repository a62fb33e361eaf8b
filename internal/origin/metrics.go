package origin

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of asking an anchor origin.
const (
	// outcomeMerged: the answer is the local result with the origin's operations merged in.
	outcomeMerged = "merged"
	// outcomeCurrent: the origin has nothing this domain lacks.
	outcomeCurrent = "current"
	// outcomeMismatch: the origin's answer breaks Orb's rules (another anchor origin, or a
	// document, commitment or canonicalId the merge does not give).
	outcomeMismatch = "mismatch"
	// outcomeInvalid: the answer is not a resolution result within the bounds.
	outcomeInvalid = "invalid"
	// outcomeUnknown: the origin does not resolve the DID under that name (4xx).
	outcomeUnknown = "unknown"
	// outcomeUnreachable: discovery or resolution failed (refused, timed out, 5xx); the origin
	// is not asked again for a while.
	outcomeUnreachable = "unreachable"
	// outcomeSkipped: the origin failed recently and was not asked.
	outcomeSkipped = "skipped"
	// outcomeBusy: as many resolutions as allowed were asking origins; this one was not.
	outcomeBusy = "busy"
)

type metrics struct {
	resolutions *prometheus.CounterVec
	duration    prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		resolutions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_origin_resolutions_total",
			Help: "Resolutions that asked a DID's anchor origin (--resolve-from-anchor-origin), by outcome: merged, current, mismatch (the origin broke the rules; the local result was given), invalid, unknown, unreachable, skipped (the origin failed recently), busy (as many resolutions as allowed were asking origins; the local result was given).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "anchord_origin_resolution_duration_seconds",
			Help:    "Time a resolution spent asking a DID's anchor origin.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
	}
	for _, c := range []prometheus.Collector{m.resolutions, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register origin metrics: %w", err)
		}
	}
	return m, nil
}
