package anchor

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	written      *prometheus.CounterVec
	writeLatency prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		written: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_anchor_written_total", Help: "Anchors recorded, by backend and initial status.",
		}, []string{"backend", "status"}),
		writeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_anchor_write_duration_seconds", Help: "Time to record one anchor (inside the batch transaction).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
	}
	for _, c := range []prometheus.Collector{m.written, m.writeLatency} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register anchor metrics: %w", err)
		}
	}
	return m, nil
}
