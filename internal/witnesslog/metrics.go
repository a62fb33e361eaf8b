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

	cosigns         *prometheus.CounterVec
	cosignDuration  prometheus.Histogram
	cosignedSize    prometheus.Gauge
	witnessRequests *prometheus.CounterVec
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
	m.cosigns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "anchord_witnesslog_cosigns_total",
		Help: "Rounds of cosigning a new checkpoint of the witness log, by outcome (cosigned, failed, failed_open).",
	}, []string{"outcome"})
	m.cosignDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "anchord_witnesslog_cosign_duration_seconds", Help: "Time from asking the witnesses to a checkpoint meeting the witness policy's quorum.",
		Buckets: []float64{.005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10},
	})
	m.cosignedSize = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "anchord_witnesslog_cosigned_size", Help: "Tree size of the latest checkpoint this instance had cosigned and served.",
	})
	// One series per witness of the operator's policy and status.
	m.witnessRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "anchord_witnesslog_witness_requests_total",
		Help: "add-checkpoint requests to the witnesses of the policy, by witness host and HTTP status (error: no answer).",
	}, []string{"witness", "code"})
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
	for _, c := range []prometheus.Collector{m.appends, m.failures, m.duration, treeSize, published,
		m.cosigns, m.cosignDuration, m.cosignedSize, m.witnessRequests} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register witness log metrics: %w", err)
		}
	}
	return m, nil
}
