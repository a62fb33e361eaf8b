package observer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	observed   prometheus.Counter
	foreign    prometheus.Counter
	operations prometheus.Counter
	invalid    prometheus.Counter
	lag        prometheus.Histogram
	duration   prometheus.Histogram
	// stateReplays counts DID states computed from the DID's whole history at index time;
	// stateUnreadable stored states that did not decode.
	stateReplays    prometheus.Counter
	stateUnreadable prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		observed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_anchors_total", Help: "Anchors observed (operations indexed per DID).",
		}),
		foreign: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_foreign_anchors_total", Help: "Anchors of other domains observed (a subset of anchord_observer_anchors_total).",
		}),
		operations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_operations_total", Help: "Operations indexed per DID.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_invalid_batches_total", Help: "Anchored batches (or their provisional files) the reader rejected.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_observer_lag_seconds", Help: "Time from an anchor's completion to its observation.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_observer_duration_seconds", Help: "Time to read and index one anchor.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		stateReplays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_state_replays_total",
			Help: "DID states computed from the DID's whole history when an operation was indexed (anchored out of order, or changing which earlier operations apply).",
		}),
		stateUnreadable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_state_unreadable_total", Help: "Stored DID states that did not decode (computed again from the DID's operations).",
		}),
	}
	for _, c := range []prometheus.Collector{m.observed, m.foreign, m.operations, m.invalid, m.lag, m.duration, m.stateReplays, m.stateUnreadable} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register observer metrics: %w", err)
		}
	}
	return m, nil
}
