package batch

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	batches   *prometheus.CounterVec
	size      prometheus.Histogram
	duration  prometheus.Histogram
	fileBytes *prometheus.HistogramVec
	shrunk    *prometheus.CounterVec
	paced     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_batch_cut_total", Help: "Batches cut and anchored, by cut reason (size, age, flush).",
		}, []string{"reason"}),
		size: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_batch_size_operations", Help: "Operations per anchored batch.",
			Buckets: []float64{1, 10, 100, 500, 1000, 2500, 5000, 7500, 10000},
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_batch_duration_seconds", Help: "Time to cut, build, store and anchor one batch.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		fileBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "anchord_batch_file_bytes", Help: "Compressed size of batch files written to CAS, by file.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 9),
		}, []string{"file"}),
		shrunk: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_batch_shrunk_total", Help: "Batches cut smaller because a file would exceed its cap, by file.",
		}, []string{"file"}),
		paced: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_batch_clock_wait_seconds", Help: "Time a due batch waited for the whole second after the domain's latest anchor (did:orb profile).",
			Buckets: []float64{.01, .05, .1, .25, .5, .75, 1},
		}),
	}
	for _, c := range []prometheus.Collector{m.batches, m.size, m.duration, m.fileBytes, m.shrunk, m.paced} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register batch metrics: %w", err)
		}
	}
	return m, nil
}
