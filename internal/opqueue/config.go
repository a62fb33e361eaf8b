package opqueue

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
)

// Defaults of Config.
const (
	// MaxBacklogDefault is the queue length above which Add pushes back (HTTP 503).
	MaxBacklogDefault = 100_000
	// LifespanDefault is op-queue-operation-lifespan: how long a queued row lives before the
	// expiry task may delete it (Orb's server default).
	LifespanDefault = 24 * time.Hour
	// MaxAttemptsDefault etc. are mq-redelivery-*, which Orb also applies to operations.
	MaxAttemptsDefault     = 30
	InitialIntervalDefault = 2 * time.Second
	MultiplierDefault      = 1.5
	MaxIntervalDefault     = time.Minute
	// MaxCommitDefault bounds the operations written by one group commit.
	MaxCommitDefault = 2000
)

// Config configures a Queue.
type Config struct {
	// InstanceID owns the rows this queue writes.
	InstanceID string
	MaxBacklog int
	Lifespan   time.Duration
	// MaxAttempts is the number of failed batches after which an operation is parked.
	MaxAttempts     int
	InitialInterval time.Duration
	Multiplier      float64
	MaxInterval     time.Duration
	MaxCommit       int
	// ReleaseFunc, if set, is told the DID suffixes of operations that were parked, which are
	// no longer pending.
	ReleaseFunc func(suffixes []string)
	// Fenced makes Ack (and parking) also require this instance's op-queue task entry, in the
	// same transaction (cluster mode): once the op-queue monitor has taken the instance over,
	// its late Ack fails instead of anchoring operations that were reposted.
	Fenced bool
	// Dedup records every anchored operation (anchored_ops) in the anchor's transaction and
	// drops already anchored copies before batching (cluster mode, where a message can be
	// delivered twice). Embedded, intake's checks already refuse a second copy.
	Dedup bool
	// RepostFunc, if set, makes Nack repost failed operations (cluster mode: a delayed publish
	// to the operation topic, so any instance can take them) instead of retrying them here.
	RepostFunc func(ctx context.Context, ops []Op, delay time.Duration) error
	// NowFunc is the clock for availability and backoff; nil means time.Now. Tests set it.
	NowFunc func() time.Time

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.MaxBacklog = cmpOr(c.MaxBacklog, MaxBacklogDefault)
	c.Lifespan = cmpOr(c.Lifespan, LifespanDefault)
	c.MaxAttempts = cmpOr(c.MaxAttempts, MaxAttemptsDefault)
	c.InitialInterval = cmpOr(c.InitialInterval, InitialIntervalDefault)
	c.Multiplier = cmpOr(c.Multiplier, MultiplierDefault)
	c.MaxInterval = cmpOr(c.MaxInterval, MaxIntervalDefault)
	c.MaxCommit = cmpOr(c.MaxCommit, MaxCommitDefault)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c
}

func (c Config) validate() error {
	if c.InstanceID == "" {
		return errors.New("opqueue: instance id is empty")
	}
	return nil
}

// backoff is the wait before an operation that failed attempts batches is offered again.
func (c Config) backoff(attempts int) time.Duration {
	return loop.Backoff(attempts, c.InitialInterval, c.Multiplier, c.MaxInterval)
}

func cmpOr[T int | float64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
