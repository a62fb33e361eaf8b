package explorer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpapi"
)

// pipelineMetrics registers metrics of the names and kinds the pipeline's packages register.
type pipelineMetrics struct {
	accepted *prometheus.CounterVec
	anchored prometheus.Counter
	batches  *prometheus.CounterVec
	queue    prometheus.Gauge
	oldest   prometheus.Gauge
}

func newPipelineMetrics(t *testing.T, reg prometheus.Registerer) *pipelineMetrics {
	t.Helper()
	m := &pipelineMetrics{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricAccepted, Help: "h"}, []string{"type"}),
		anchored: prometheus.NewCounter(prometheus.CounterOpts{Name: metricAnchored, Help: "h"}),
		batches:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricBatches, Help: "h"}, []string{"reason"}),
		queue:    prometheus.NewGauge(prometheus.GaugeOpts{Name: metricQueue, Help: "h"}),
		oldest:   prometheus.NewGauge(prometheus.GaugeOpts{Name: metricOldest, Help: "h"}),
	}
	for _, c := range []prometheus.Collector{m.accepted, m.anchored, m.batches, m.queue, m.oldest} {
		require.NoError(t, reg.Register(c))
	}
	return m
}

func TestRecorderSamplesAndRates(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := newPipelineMetrics(t, reg)
	r, err := NewRecorder(RecorderConfig{Interval: time.Second, Window: 4 * time.Second}, reg)
	require.NoError(t, err)

	now, history, interval := r.Pipeline()
	require.Empty(t, history)
	require.Equal(t, time.Second, interval)
	require.Zero(t, now.Accepted)

	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := r.record(t0)
	require.NoError(t, err)
	require.Zero(t, s.AcceptedPerSecond, "no rate without a sample before")

	m.accepted.WithLabelValues("create").Add(30)
	m.accepted.WithLabelValues("update").Add(10)
	m.anchored.Add(20)
	m.batches.WithLabelValues("size").Inc()
	m.batches.WithLabelValues("age").Inc()
	m.queue.Set(25)
	m.oldest.Set(1.5)
	s, err = r.record(t0.Add(2 * time.Second))
	require.NoError(t, err)
	require.Equal(t, httpapi.PipelineSample{
		At: t0.Add(2 * time.Second), Accepted: 40, Anchored: 20, Batches: 2,
		AcceptedPerSecond: 20, AnchoredPerSecond: 10, QueueDepth: 25, OldestAgeSeconds: 1.5,
	}, s, "counters summed over their labels; rates over the 2 s since the last sample")

	now, history, _ = r.Pipeline()
	require.Len(t, history, 2)
	require.Equal(t, 40.0, now.Accepted)
	require.Equal(t, 20.0, now.AcceptedPerSecond, "now carries the last sample's rates")
}

func TestRecorderKeepsTheWindow(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := newPipelineMetrics(t, reg)
	r, err := NewRecorder(RecorderConfig{Interval: time.Second, Window: 3 * time.Second}, reg)
	require.NoError(t, err)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 7 {
		m.accepted.WithLabelValues("create").Add(float64(i))
		_, err := r.record(t0.Add(time.Duration(i) * time.Second))
		require.NoError(t, err)
	}
	_, history, _ := r.Pipeline()
	require.Len(t, history, 3, "Window/Interval samples")
	for i, s := range history {
		require.Equal(t, t0.Add(time.Duration(4+i)*time.Second), s.At, "the newest, oldest first")
		require.Equal(t, float64(4+i), s.AcceptedPerSecond)
	}
}

func TestRecorderWithoutPipelineMetrics(t *testing.T) {
	t.Parallel()
	// A registry without the pipeline's metrics (a submitter instance) gives zeros, not errors.
	r, err := NewRecorder(RecorderConfig{}, prometheus.NewRegistry())
	require.NoError(t, err)
	s, err := r.record(time.Now())
	require.NoError(t, err)
	require.Zero(t, s.Accepted)
	require.Zero(t, s.QueueDepth)
}

// failingCollector fails to collect, as a collector whose source is unreachable does.
type failingCollector struct{ desc *prometheus.Desc }

func (f failingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }
func (f failingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(f.desc, errors.New("source unreachable"))
}

func TestRecorderKeepsWhatItCouldGather(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := newPipelineMetrics(t, reg)
	require.NoError(t, reg.Register(failingCollector{prometheus.NewDesc("broken", "h", nil, nil)}))
	m.queue.Set(7)
	r, err := NewRecorder(RecorderConfig{}, reg)
	require.NoError(t, err)
	s, err := r.record(time.Now())
	require.Error(t, err)
	require.Equal(t, 7.0, s.QueueDepth)
	_, history, _ := r.Pipeline()
	require.Len(t, history, 1, "the partial sample is recorded")
}

func TestNewRecorderValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []RecorderConfig{
		{Interval: -time.Second},
		{Interval: time.Second, Window: time.Second},
	} {
		_, err := NewRecorder(cfg, prometheus.NewRegistry())
		require.Error(t, err, "%+v", cfg)
	}
	_, err := NewRecorder(RecorderConfig{}, nil)
	require.Error(t, err)
}

func TestRecorderRunStopsWithItsContext(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	newPipelineMetrics(t, reg)
	r, err := NewRecorder(RecorderConfig{Interval: 10 * time.Millisecond, Window: time.Second}, reg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	anchordtest.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
		_, h, _ := r.Pipeline()
		return len(h) >= 3
	}, "Run records samples")
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 5*time.Second))
}
