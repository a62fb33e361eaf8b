package explorer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/loop"
)

// Defaults of RecorderConfig fields left zero.
const (
	// IntervalDefault is the time between samples: what the page's chart resolves.
	IntervalDefault = 2 * time.Second
	// WindowDefault is how far back the chart reaches.
	WindowDefault = 10 * time.Minute
)

// The metrics the recorder reads, by name. They belong to intake, opqueue and batch; reading
// them from the registry keeps the explorer independent of those packages, and shows on the
// page exactly what /metrics says.
const (
	metricAccepted = "anchord_intake_accepted_total"
	metricAnchored = "anchord_opqueue_acked_total"
	metricBatches  = "anchord_batch_cut_total"
	metricQueue    = "anchord_opqueue_length"
	metricOldest   = "anchord_opqueue_oldest_pending_age_seconds"
)

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	// Interval is the time between samples (IntervalDefault).
	Interval time.Duration
	// Window is how long samples are kept (WindowDefault); it must hold at least two.
	Window time.Duration
	Logger *slog.Logger
}

// Recorder samples the pipeline's metrics at an interval and keeps the samples of the last
// Window in a ring, so the explorer charts the last minutes as soon as it is opened rather than
// from the moment a browser started polling. It implements httpapi.PipelineSource.
type Recorder struct {
	cfg    RecorderConfig
	g      prometheus.Gatherer
	logger *slog.Logger

	mu   sync.Mutex
	ring []httpapi.PipelineSample // capacity Window/Interval; oldest at next once full
	next int
	full bool
}

// NewRecorder returns a Recorder that reads g (the daemon's registry).
func NewRecorder(cfg RecorderConfig, g prometheus.Gatherer) (*Recorder, error) {
	cfg.Interval = cmp.Or(cfg.Interval, IntervalDefault)
	cfg.Window = cmp.Or(cfg.Window, WindowDefault)
	if cfg.Interval < 0 || cfg.Window < 2*cfg.Interval {
		return nil, fmt.Errorf("explorer recorder: interval %s must be positive and window %s at least two intervals", cfg.Interval, cfg.Window)
	}
	if g == nil {
		return nil, fmt.Errorf("explorer recorder: no metrics gatherer")
	}
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Recorder{cfg: cfg, g: g, logger: logger, ring: make([]httpapi.PipelineSample, 0, int(cfg.Window/cfg.Interval))}, nil
}

// Run records a sample every Interval until ctx is done; it returns nil then.
func (r *Recorder) Run(ctx context.Context) error {
	loop.Every(ctx, r.cfg.Interval, func(ctx context.Context) {
		if _, err := r.runOnce(); err != nil {
			// The gatherer reports a collector's failure with whatever it could gather; the
			// sample holds the rest.
			r.logger.DebugContext(ctx, "gather pipeline metrics", "error", err)
		}
	})
	return nil
}

func (r *Recorder) runOnce() (httpapi.PipelineSample, error) { return r.record(time.Now()) }

// record reads the metrics and appends a sample taken at now, with the rates since the sample
// before.
func (r *Recorder) record(now time.Time) (httpapi.PipelineSample, error) {
	s, err := r.read(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.lastLocked(); ok {
		if dt := now.Sub(prev.At).Seconds(); dt > 0 {
			s.AcceptedPerSecond = rate(prev.Accepted, s.Accepted, dt)
			s.AnchoredPerSecond = rate(prev.Anchored, s.Anchored, dt)
		}
	}
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, s)
	} else {
		r.ring[r.next] = s
		r.next = (r.next + 1) % len(r.ring)
		r.full = true
	}
	return s, err
}

// rate is a counter's rate; a counter that went down (a collector that was replaced) has none.
func rate(before, after, seconds float64) float64 {
	if after < before {
		return 0
	}
	return (after - before) / seconds
}

func (r *Recorder) lastLocked() (httpapi.PipelineSample, bool) {
	switch {
	case len(r.ring) == 0:
		return httpapi.PipelineSample{}, false
	case !r.full:
		return r.ring[len(r.ring)-1], true
	}
	return r.ring[(r.next+len(r.ring)-1)%len(r.ring)], true
}

// Pipeline implements httpapi.PipelineSource: the figures read now (with the rates of the last
// sample) and the recorded samples, oldest first.
func (r *Recorder) Pipeline() (httpapi.PipelineSample, []httpapi.PipelineSample, time.Duration) {
	now, err := r.read(time.Now())
	if err != nil {
		r.logger.Debug("gather pipeline metrics", "error", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	history := make([]httpapi.PipelineSample, 0, len(r.ring))
	if r.full {
		history = append(history, r.ring[r.next:]...)
		history = append(history, r.ring[:r.next]...)
	} else {
		history = append(history, r.ring...)
	}
	if last, ok := r.lastLocked(); ok {
		now.AcceptedPerSecond, now.AnchoredPerSecond = last.AcceptedPerSecond, last.AnchoredPerSecond
	}
	return now, history, r.cfg.Interval
}

// read gathers the registry once and sums each metric over its label values.
func (r *Recorder) read(now time.Time) (httpapi.PipelineSample, error) {
	families, err := r.g.Gather()
	s := httpapi.PipelineSample{At: now.UTC()}
	for _, f := range families {
		var dst *float64
		switch f.GetName() {
		case metricAccepted:
			dst = &s.Accepted
		case metricAnchored:
			dst = &s.Anchored
		case metricBatches:
			dst = &s.Batches
		case metricQueue:
			dst = &s.QueueDepth
		case metricOldest:
			dst = &s.OldestAgeSeconds
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			*dst += value(m)
		}
	}
	if err != nil {
		return s, fmt.Errorf("gather metrics: %w", err)
	}
	return s, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}
