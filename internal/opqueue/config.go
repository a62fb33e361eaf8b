package opqueue

import (
	"cmp"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
)

// Defaults of Config.
const (
	// MaxBacklogDefault is op-queue-max-backlog: the queue length above which Add pushes back
	// (HTTP 503).
	MaxBacklogDefault = 100_000
	// LifespanDefault is op-queue-operation-lifespan: how long a queued row lives before the
	// expiry task parks it (Orb's server default).
	LifespanDefault = 24 * time.Hour
	// MaxCommitDefault bounds the operations written by one group commit.
	MaxCommitDefault = 2000
)

// Config configures a Queue. The zero value of every field but InstanceID means its default.
type Config struct {
	// InstanceID owns the rows this queue writes.
	InstanceID string
	MaxBacklog int
	Lifespan   time.Duration
	// Redelivery is the retry schedule of operations whose batch failed: the messages' schedule
	// (mq-redelivery-*), which Orb also applies to operations. After Redelivery.MaxAttempts
	// failed batches an operation is parked.
	Redelivery pubsub.RedeliveryConfig
	MaxCommit  int
	// ReleaseFunc, if set, is told the DIDs and ids of operations that were parked, which are no
	// longer pending.
	ReleaseFunc func(keys []store.DIDPendingKey)
	// NowFunc is the clock for availability and backoff; nil means time.Now. Tests set it.
	NowFunc func() time.Time

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.MaxBacklog = cmp.Or(c.MaxBacklog, MaxBacklogDefault)
	c.Lifespan = cmp.Or(c.Lifespan, LifespanDefault)
	c.Redelivery = c.Redelivery.WithDefaults()
	c.MaxCommit = cmp.Or(c.MaxCommit, MaxCommitDefault)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c
}

func (c Config) validate() error {
	if c.InstanceID == "" {
		return errors.New("opqueue: instance id is empty")
	}
	if c.MaxBacklog < 0 || c.Lifespan < 0 || c.MaxCommit < 0 {
		return errors.New("opqueue: negative backlog, lifespan or commit size")
	}
	return c.Redelivery.Validate()
}

// backoff is the wait before an operation that failed attempts batches is offered again.
func (c Config) backoff(attempts int) time.Duration {
	r := c.Redelivery
	return loop.Backoff(attempts, r.InitialInterval, r.Multiplier, r.MaxInterval)
}
