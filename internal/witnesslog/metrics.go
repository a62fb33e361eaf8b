package witnesslog

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/transparency-dev/tessera"
)

// gaugeReadTimeout bounds the storage read behind a gauge at scrape time.
const gaugeReadTimeout = 2 * time.Second

type metrics struct {
	appends  prometheus.Counter
	failures prometheus.Counter
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, r tessera.LogReader) (*metrics, error) {
	m := &metrics{
		appends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_witnesslog_appends_total", Help: "Entries appended to the witness log (integrated and durable).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_witnesslog_append_failures_total", Help: "Appends to the witness log that returned an error.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "anchord_witnesslog_append_duration_seconds", Help: "Time from Append to the entry's index being final.",
			Buckets: []float64{.002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5},
		}),
	}
	treeSize := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "anchord_witnesslog_tree_size", Help: "Entries integrated into the witness log's tree (-1: unreadable).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), gaugeReadTimeout)
		defer cancel()
		n, err := r.IntegratedSize(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	published := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "anchord_witnesslog_checkpoint_size", Help: "Tree size of the witness log's latest published checkpoint (-1: unreadable).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), gaugeReadTimeout)
		defer cancel()
		raw, err := r.ReadCheckpoint(ctx)
		if err != nil {
			return -1
		}
		n, err := checkpointSize(raw)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	for _, c := range []prometheus.Collector{m.appends, m.failures, m.duration, treeSize, published} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register witness log metrics: %w", err)
		}
	}
	return m, nil
}
