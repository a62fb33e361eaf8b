package opqueue

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	added        prometheus.Counter
	acked        prometheus.Counter
	nacked       prometheus.Counter
	deadLettered prometheus.Counter
	restored     prometheus.Counter
	reposted     prometheus.Counter
	duplicates   prometheus.Counter
	lost         prometheus.Counter
	rejected     *prometheus.CounterVec
	addLatency   prometheus.Histogram
	commitSize   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, q *Queue) (*metrics, error) {
	m := &metrics{
		added: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_added_total", Help: "Operations committed to the queue.",
		}),
		acked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_acked_total", Help: "Operations removed from the queue by an anchor.",
		}),
		nacked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_nacked_total", Help: "Operations whose batch failed (retried or parked).",
		}),
		deadLettered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_dead_lettered_total", Help: "Operations parked in dead letters.",
		}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_restored_total", Help: "Operations queued again: dead letters retried, operations of failed anchors.",
		}),
		reposted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_reposted_total", Help: "Operations reposted to the operation topic (failed batches, shutdown, dead instances).",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_duplicates_dropped_total", Help: "Second copies of already anchored operations dropped before batching.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_disowned_total", Help: "Operations dropped from memory because their rows were parked or taken by another instance.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_opqueue_rejected_total", Help: "Operations refused by Add, by reason.",
		}, []string{"reason"}),
		addLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "anchord_opqueue_add_duration_seconds",
			Help:    "Time from Add to the committed row (group commit wait included).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		commitSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "anchord_opqueue_commit_size",
			Help:    "Operations written per group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
	}
	length := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "anchord_opqueue_length", Help: "Operations queued or in a batch being anchored.",
	}, func() float64 { return float64(q.Backlog()) })
	oldest := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "anchord_opqueue_oldest_pending_age_seconds", Help: "Age of the oldest operation available for a batch.",
	}, func() float64 {
		s := q.Status(q.cfg.NowFunc())
		if s.Oldest.IsZero() {
			return 0
		}
		return q.cfg.NowFunc().Sub(s.Oldest).Seconds()
	})
	for _, c := range []prometheus.Collector{m.added, m.acked, m.nacked, m.deadLettered, m.restored, m.reposted, m.duplicates, m.lost, m.rejected, m.addLatency, m.commitSize, length, oldest} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register opqueue metrics: %w", err)
		}
	}
	return m, nil
}
