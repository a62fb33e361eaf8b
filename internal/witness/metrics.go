package witness

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	offers      *prometheus.CounterVec
	proofs      *prometheus.CounterVec
	completed   prometheus.Counter
	failed      prometheus.Counter
	requeuedOps prometheus.Counter
	witnessTime prometheus.Histogram
	monitored   *prometheus.CounterVec
	// signed is the witness side's (newSignerMetrics).
	signed *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		offers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anchord_witness_offers_total",
			Help: "Offers posted to witnesses, by reason: first (at anchoring) or reselect (by the status monitor)."}, []string{"reason"}),
		proofs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anchord_witness_proofs_total",
			Help: "Witness proofs received, by outcome: added, duplicate, late (anchor no longer pending), unselected, out_of_window."}, []string{"outcome"}),
		completed: prometheus.NewCounter(prometheus.CounterOpts{Name: "anchord_witness_anchors_completed_total",
			Help: "Anchors whose witness policy was satisfied."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "anchord_witness_anchors_failed_total",
			Help: "Anchors failed because no eligible witness answered in time; their operations went back to the queue."}),
		requeuedOps: prometheus.NewCounter(prometheus.CounterOpts{Name: "anchord_witness_requeued_operations_total",
			Help: "Operations given back to the queue by failed witnessed anchors."}),
		witnessTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "anchord_witness_seconds",
			Help:    "Time from an anchor's credential issue to its witness policy being satisfied.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}),
		monitored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anchord_witness_monitor_checks_total",
			Help: "Anchors the status monitor looked at, by outcome: completed, reoffered, waiting, failed."}, []string{"outcome"}),
	}
	for _, c := range []prometheus.Collector{m.offers, m.proofs, m.completed, m.failed, m.requeuedOps, m.witnessTime, m.monitored} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// newSignerMetrics registers the witness side's counter only, so that a domain that is both an
// origin and a witness registers each metric once.
func newSignerMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{signed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anchord_witness_offers_received_total",
		Help: "Offers received as a witness, by outcome: signed, duplicate, refused."}, []string{"outcome"})}
	if err := reg.Register(m.signed); err != nil {
		return nil, err
	}
	return m, nil
}
