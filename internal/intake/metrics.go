package intake

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	accepted *prometheus.CounterVec
	rejected *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_intake_accepted_total", Help: "Operations accepted (durably queued), by type.",
		}, []string{"type"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_intake_rejected_total", Help: "Operations rejected, by error code.",
		}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{m.accepted, m.rejected} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register intake metrics: %w", err)
		}
	}
	return m, nil
}
