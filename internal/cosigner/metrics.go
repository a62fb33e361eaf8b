package cosigner

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests     *prometheus.CounterVec
	duration     prometheus.Histogram
	cosigned     prometheus.Counter
	inconsistent prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_cosigner_requests_total", Help: "add-checkpoint requests this witness answered, by HTTP status.",
		}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_cosigner_request_duration_seconds", Help: "Time to answer an add-checkpoint request.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1},
		}),
		cosigned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cosigner_cosigned_total", Help: "Checkpoints this witness cosigned.",
		}),
		inconsistent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cosigner_inconsistent_total", Help: "Validly signed checkpoints refused as inconsistent with the one cosigned before (422): a log that may have forked.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.cosigned, m.inconsistent} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register cosigner metrics: %w", err)
		}
	}
	return m, nil
}
