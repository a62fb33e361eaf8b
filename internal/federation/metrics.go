package federation

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
)

type metrics struct {
	outbox     *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	inbox      *prometheus.CounterVec
	syncQueued *prometheus.CounterVec
	syncLag    *prometheus.GaugeVec
	// syncRefused counts a source's refusals to be read (401, 403).
	syncRefused *prometheus.CounterVec
	gauges      *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		outbox: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_federation_outbox_activities_total",
			Help: "Activities posted to our outbox, by type.",
		}, []string{"type"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_federation_deliveries_total",
			Help: "Delivery attempts of outbox activities to other domains' inboxes, by outcome (delivered, retried, parked).",
		}, []string{"outcome"}),
		inbox: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_federation_inbox_activities_total",
			Help: "Inbox activities by type (unknown for one not read yet) and outcome: received, duplicate, refused, too_large, rate_limited, ignored (at the inbox); done, retried, parked (by the processor).",
		}, []string{"type", "outcome"}),
		syncQueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_federation_sync_queued_activities_total",
			Help: "Activities the activity sync found missing and queued into the inbox, by source collection.",
		}, []string{"source"}),
		syncLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "anchord_federation_sync_lag_activities",
			Help: "Activities of a source collection not yet read by the activity sync, at its last run.",
		}, []string{"source"}),
		syncRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_federation_sync_refused_total",
			Help: "Reads of a source collection the source refused (401, 403), after which the activity sync backs off from it, by source collection.",
		}, []string{"source"}),
		gauges: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "anchord_federation_items",
			Help: "Federation state by kind: deliveries_pending, deliveries_parked, inbox_queued, inbox_parked, followers, following.",
		}, []string{"kind"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.outbox, m.deliveries, m.inbox, m.syncQueued, m.syncLag, m.syncRefused, m.gauges} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register federation metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) setCounts(c store.ActivityCountsResult) {
	m.gauges.WithLabelValues("deliveries_pending").Set(float64(c.DeliveriesPending))
	m.gauges.WithLabelValues("deliveries_parked").Set(float64(c.DeliveriesParked))
	m.gauges.WithLabelValues("inbox_queued").Set(float64(c.InboxQueued))
	m.gauges.WithLabelValues("inbox_parked").Set(float64(c.InboxParked))
	m.gauges.WithLabelValues("followers").Set(float64(c.Followers))
	m.gauges.WithLabelValues("following").Set(float64(c.Following))
}
