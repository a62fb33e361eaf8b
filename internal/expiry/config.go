package expiry

import (
	"cmp"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TaskID is the task manager id of the expiry task (Orb's).
const TaskID = "data-expiry"

// Defaults of Config.
const (
	// IntervalDefault is data-expiry-check-interval (Orb's default).
	IntervalDefault = time.Minute
	// BatchSizeDefault is the most rows one statement removes (Orb's WithMaxBatchSize default).
	BatchSizeDefault = 5000
	// MaxBatchesDefault bounds the batches per table per run: 100,000 rows with the default
	// batch size. The rest waits for the next run.
	MaxBatchesDefault = 20
)

// Config configures a Service.
type Config struct {
	// Interval is data-expiry-check-interval: the least time between the end of a run and the
	// start of the next.
	Interval   time.Duration
	BatchSize  int
	MaxBatches int

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.Interval = cmp.Or(c.Interval, IntervalDefault)
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.MaxBatches = cmp.Or(c.MaxBatches, MaxBatchesDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c
}

func (c Config) validate() error {
	if c.Interval < 0 || c.BatchSize < 0 || c.MaxBatches < 0 {
		return errors.New("expiry: interval, batch size and max batches must not be negative")
	}
	return nil
}
