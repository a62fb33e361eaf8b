package devledger

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the devledger's Prometheus metrics; they mirror Stats.
type metrics struct {
	requests   *prometheus.CounterVec
	accepted   prometheus.Counter
	duplicates prometheus.Counter
	committed  prometheus.Counter
	invalid    prometheus.Counter
	rejected   prometheus.Counter
	faults     *prometheus.CounterVec
	pending    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_devledger_requests_total",
			Help: "HTTP requests served, by route and status code.",
		}, []string{"route", "code"}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_devledger_batches_accepted_total",
			Help: "Distinct batches recorded (a resubmission of a known batch is not counted).",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_devledger_batches_duplicate_total",
			Help: "Submissions of a batch id already recorded; answered 202 and not recorded again.",
		}),
		committed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_devledger_batches_committed_total",
			Help: "Batches committed.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_devledger_batches_invalid_total",
			Help: "Batches found INVALID when due.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_devledger_batches_rejected_total",
			Help: "Submissions refused with 400 because the BatchList was malformed or badly signed (injected faults not counted).",
		}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_devledger_faults_total",
			Help: "Injected faults, by kind.",
		}, []string{"kind"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_devledger_batches_pending",
			Help: "Batches recorded and not yet committed or found invalid.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.accepted, m.duplicates, m.committed, m.invalid, m.rejected, m.faults, m.pending} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register devledger metrics: %w", err)
		}
	}
	for _, k := range faultKinds {
		m.faults.WithLabelValues(k)
	}
	return m, nil
}
