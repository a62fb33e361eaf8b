package relay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of one anchor event at the Receiver (anchord_relay_anchors_total).
const (
	outcomeApplied   = "applied"
	outcomeDuplicate = "duplicate"
	outcomeWaiting   = "waiting"
	outcomeInvalid   = "invalid"
	outcomeRefused   = "refused"
)

// Where a batch file came from (anchord_relay_fetched_bytes_total).
const (
	sourceLocal  = "local"
	sourceOrigin = "origin"
	sourceSender = "sender"
	sourceMirror = "mirror"
)

type publisherMetrics struct {
	published prometheus.Counter
	duration  prometheus.Histogram
}

func newPublisherMetrics(reg prometheus.Registerer) (*publisherMetrics, error) {
	m := &publisherMetrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_relay_published_total", Help: "Anchors of this domain published (a Create posted to its followers).",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_relay_publish_seconds", Help: "Time to build, sign and post one anchor's Create.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	for _, c := range []prometheus.Collector{m.published, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}

type receiverMetrics struct {
	anchors      *prometheus.CounterVec
	stale        prometheus.Counter
	lag          prometheus.Histogram
	waiting      prometheus.Gauge
	fetchedBytes *prometheus.CounterVec
}

var lagBuckets = []float64{.05, .1, .25, .5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300, 600}

func newReceiverMetrics(reg prometheus.Registerer) (*receiverMetrics, error) {
	m := &receiverMetrics{
		anchors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_relay_anchors_total", Help: "Anchor events of other domains handled, by outcome: applied, duplicate, waiting (for a parent), invalid, refused (not followed).",
		}, []string{"outcome"}),
		stale: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_relay_stale_operations_total", Help: "Operations of other domains' anchors not indexed: their previous anchor is not their DID's latest anchor here.",
		}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_relay_lag_seconds", Help: "Time from an anchor's publication at its origin (the activity's published time) to its indexing here.",
			Buckets: lagBuckets,
		}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_relay_waiting_anchors", Help: "Anchors of other domains waiting for a parent, at the last sweep.",
		}),
		fetchedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_relay_fetched_bytes_total", Help: "Batch file bytes read for other domains' anchors, by source: local, origin, sender, mirror.",
		}, []string{"source"}),
	}
	for _, o := range []string{outcomeApplied, outcomeDuplicate, outcomeWaiting, outcomeInvalid, outcomeRefused} {
		m.anchors.WithLabelValues(o)
	}
	for _, s := range []string{sourceLocal, sourceOrigin, sourceSender, sourceMirror} {
		m.fetchedBytes.WithLabelValues(s)
	}
	for _, c := range []prometheus.Collector{m.anchors, m.stale, m.lag, m.waiting, m.fetchedBytes} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register relay metrics: %w", err)
		}
	}
	return m, nil
}
