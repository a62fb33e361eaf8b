package logmonitor

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	checks          *prometheus.CounterVec
	inconsistencies prometheus.Counter
	reported        prometheus.Counter
	size            *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_logmonitor_checks_total",
			Help: "Checks of other domains' witness logs, by outcome (first, advanced, unchanged, not_cosigned, inconsistent, known_inconsistent, error).",
		}, []string{"outcome"}),
		inconsistencies: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_logmonitor_inconsistencies_total",
			Help: "Checkpoints of other domains' witness logs found inconsistent with one verified before.",
		}),
		reported: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_logmonitor_reported_total",
			Help: "Inconsistent witness logs reported with a log_inconsistency dead letter.",
		}),
		// One series per monitored log: the domains this one follows or that witness for it,
		// which an operator admits one by one.
		size: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "anchord_logmonitor_verified_size",
			Help: "Tree size of the last verified checkpoint of each monitored witness log.",
		}, []string{"log"}),
	}
	for _, c := range []prometheus.Collector{m.checks, m.inconsistencies, m.reported, m.size} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register log monitor metrics: %w", err)
		}
	}
	return m, nil
}
