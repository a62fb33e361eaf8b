package expiry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	expired  *prometheus.CounterVec
	parked   *prometheus.CounterVec
	failures *prometheus.CounterVec
	capped   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_expiry_expired_rows_total", Help: "Expired rows removed, by table (deleted or parked).",
		}, []string{"table"}),
		parked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_expiry_parked_rows_total", Help: "Expired rows parked in dead letters instead of deleted, by table.",
		}, []string{"table"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_expiry_failures_total", Help: "Batches that failed, by table.",
		}, []string{"table"}),
		capped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_expiry_capped_runs_total", Help: "Runs that stopped at the batch limit with expired rows left, by table.",
		}, []string{"table"}),
	}
	for _, c := range []prometheus.Collector{m.expired, m.parked, m.failures, m.capped} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register expiry metrics: %w", err)
		}
	}
	return m, nil
}
