package egress

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	inFlight     prometheus.Gauge
	refused      *prometheus.CounterVec
	slotWait     prometheus.Histogram
	slotTimeouts *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_egress_requests_in_flight",
			Help: "Requests to other domains holding a slot: sent, or their answer still being read.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_egress_refused_total",
			Help: "Requests refused by the outbound guard, by reason (loopback, private, link_local, cgnat, multicast, unspecified, reserved, admin_listener, scheme, bad_address).",
		}, []string{"reason"}),
		slotWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "anchord_egress_slot_wait_seconds",
			Help:    "Time a request waited for a slot under the global and per-host caps.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
		}),
		slotTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_egress_slot_timeouts_total",
			Help: "Requests whose deadline passed while they waited for a slot, by the cap they waited on (host, global).",
		}, []string{"cap"}),
	}
	for _, r := range []string{ReasonLoopback, ReasonPrivate, ReasonLinkLocal, ReasonCGNAT, ReasonMulticast, ReasonUnspecified, ReasonReserved, ReasonAdmin, ReasonScheme, ReasonAddress} {
		m.refused.WithLabelValues(r)
	}
	for _, c := range []string{"host", "global"} {
		m.slotTimeouts.WithLabelValues(c)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.inFlight, m.refused, m.slotWait, m.slotTimeouts} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register egress metrics: %w", err)
		}
	}
	return m, nil
}
