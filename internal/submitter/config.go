package submitter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
)

// RequeueFunc gives the operations of a failed anchor back to the operation queue. It runs in
// tx, the transaction that fails the anchor, so the anchor fails if and only if its operations
// are queued again (the durability chain, link 4). An error rolls both back.
type RequeueFunc func(ctx context.Context, tx store.Executor, a store.Anchor) error

// Defaults of Config.
const (
	// IntervalDefault is the pause before the next claim after a claim that found fewer
	// batches than it asked for (after a full one, the next claim comes as soon as there is
	// room).
	IntervalDefault = time.Second
	// ClaimLimitDefault is the most batches one claim takes (Grid's claim_limit) and the most
	// one submitter holds at once; a new claim is taken when half of it is free.
	ClaimLimitDefault = 32
	// ClaimTTLDefault is how long a claim is valid (Grid uses 30 s). A submitter makes no ledger
	// request later than ClaimTTL × 3/4 after it claimed, so a live submitter's claims never
	// expire under it.
	ClaimTTLDefault = time.Minute
	// ConcurrencyDefault bounds the ledger submissions one submitter has in flight.
	ConcurrencyDefault = 8
	// RequestTimeoutDefault bounds one ledger request (Grid's submitter uses 15 s).
	RequestTimeoutDefault = 15 * time.Second
	// MaxAttemptsDefault is the number of attempts after which a batch is parked.
	MaxAttemptsDefault = 20
	// BackoffInitialDefault, BackoffMultiplierDefault and BackoffMaxDefault shape the wait
	// before the next attempt after a Retry answer: initial × multiplier^(attempt−1), capped.
	// With the defaults a batch is parked after about 75 minutes of failures.
	BackoffInitialDefault    = 2 * time.Second
	BackoffMultiplierDefault = 2.0
	BackoffMaxDefault        = 5 * time.Minute
)

// writeTimeout bounds the database writes that record an outcome; they run even when the
// round's context is cancelled, so that a shutdown does not leave claims to expire.
const writeTimeout = 10 * time.Second

// historyLimit bounds the history lines kept per batch (the newest are kept).
const historyLimit = 20

// Config configures a Submitter. The zero value of every field but InstanceID and RequeueFunc
// means its default.
type Config struct {
	// InstanceID owns the claims; it must be unique in the cluster.
	InstanceID string
	// RequeueFunc gives the operations of an anchor whose batch was rejected or parked back to
	// the queue. Required: without it they would be lost.
	RequeueFunc       RequeueFunc
	Interval          time.Duration
	ClaimLimit        int
	ClaimTTL          time.Duration
	Concurrency       int
	RequestTimeout    time.Duration
	MaxAttempts       int
	BackoffInitial    time.Duration
	BackoffMultiplier float64
	BackoffMax        time.Duration

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() (Config, error) {
	if c.InstanceID == "" {
		return c, errors.New("new submitter: instance id is empty")
	}
	if c.RequeueFunc == nil {
		return c, errors.New("new submitter: RequeueFunc is nil (the operations of failed anchors would be lost)")
	}
	if err := nonNegative(map[string]float64{
		"interval": float64(c.Interval), "claim limit": float64(c.ClaimLimit), "claim ttl": float64(c.ClaimTTL),
		"concurrency": float64(c.Concurrency), "request timeout": float64(c.RequestTimeout),
		"max attempts": float64(c.MaxAttempts), "backoff initial": float64(c.BackoffInitial),
		"backoff multiplier": c.BackoffMultiplier, "backoff max": float64(c.BackoffMax),
	}); err != nil {
		return c, fmt.Errorf("new submitter: %w", err)
	}
	c.Interval = cmp.Or(c.Interval, IntervalDefault)
	c.ClaimLimit = cmp.Or(c.ClaimLimit, ClaimLimitDefault)
	c.ClaimTTL = cmp.Or(c.ClaimTTL, ClaimTTLDefault)
	c.Concurrency = cmp.Or(c.Concurrency, ConcurrencyDefault)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, RequestTimeoutDefault)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, MaxAttemptsDefault)
	c.BackoffInitial = cmp.Or(c.BackoffInitial, BackoffInitialDefault)
	c.BackoffMultiplier = cmp.Or(c.BackoffMultiplier, BackoffMultiplierDefault)
	c.BackoffMax = cmp.Or(c.BackoffMax, BackoffMaxDefault)
	if c.RequestTimeout > c.ClaimTTL/2 {
		return c, fmt.Errorf("new submitter: request timeout %s is more than half the claim ttl %s", c.RequestTimeout, c.ClaimTTL)
	}
	if c.BackoffMultiplier < 1 {
		return c, fmt.Errorf("new submitter: backoff multiplier %v is below 1", c.BackoffMultiplier)
	}
	if c.BackoffMax < c.BackoffInitial {
		return c, fmt.Errorf("new submitter: backoff max %s is below backoff initial %s", c.BackoffMax, c.BackoffInitial)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c, nil
}

// workWindow is how long after sending the claim statement a round may still talk to the
// ledger: a quarter of the claim TTL is kept back for recording outcomes and for clock drift.
func (c Config) workWindow() time.Duration { return c.ClaimTTL - c.ClaimTTL/4 }

// LogValue shows the effective settings.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("instance_id", c.InstanceID),
		slog.Duration("interval", c.Interval),
		slog.Int("claim_limit", c.ClaimLimit),
		slog.Duration("claim_ttl", c.ClaimTTL),
		slog.Int("concurrency", c.Concurrency),
		slog.Duration("request_timeout", c.RequestTimeout),
		slog.Int("max_attempts", c.MaxAttempts),
		slog.Duration("backoff_initial", c.BackoffInitial),
		slog.Float64("backoff_multiplier", c.BackoffMultiplier),
		slog.Duration("backoff_max", c.BackoffMax),
	)
}

// Defaults of PollerConfig.
const (
	// PollIntervalDefault is the pause between status polls when the poller runs its own loop.
	PollIntervalDefault = 5 * time.Second
	// PollPageSizeDefault is how many unsettled batches are read, and asked about, at a time.
	PollPageSizeDefault = 500
	// PollConcurrencyDefault bounds the batch transitions (one transaction each) a poll
	// writes at once.
	PollConcurrencyDefault = 8
	// UnknownGraceDefault is how long after its submission a batch may be UNKNOWN to the ledger
	// (not yet seen by the validator) before it is considered lost and resubmitted.
	UnknownGraceDefault = 2 * time.Minute
)

// PollerConfig configures a Poller.
type PollerConfig struct {
	// RequeueFunc gives the operations of an anchor whose batch is INVALID back to the queue.
	// Required.
	RequeueFunc    RequeueFunc
	Interval       time.Duration
	PageSize       int
	Concurrency    int
	UnknownGrace   time.Duration
	RequestTimeout time.Duration

	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c PollerConfig) withDefaults() (PollerConfig, error) {
	if c.RequeueFunc == nil {
		return c, errors.New("new status poller: RequeueFunc is nil (the operations of failed anchors would be lost)")
	}
	if err := nonNegative(map[string]float64{
		"interval": float64(c.Interval), "page size": float64(c.PageSize), "concurrency": float64(c.Concurrency),
		"unknown grace": float64(c.UnknownGrace), "request timeout": float64(c.RequestTimeout),
	}); err != nil {
		return c, fmt.Errorf("new status poller: %w", err)
	}
	c.Interval = cmp.Or(c.Interval, PollIntervalDefault)
	c.PageSize = cmp.Or(c.PageSize, PollPageSizeDefault)
	c.Concurrency = cmp.Or(c.Concurrency, PollConcurrencyDefault)
	c.UnknownGrace = cmp.Or(c.UnknownGrace, UnknownGraceDefault)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, RequestTimeoutDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c, nil
}

// LogValue shows the effective settings.
func (c PollerConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Duration("interval", c.Interval),
		slog.Int("page_size", c.PageSize),
		slog.Int("concurrency", c.Concurrency),
		slog.Duration("unknown_grace", c.UnknownGrace),
		slog.Duration("request_timeout", c.RequestTimeout),
	)
}

func nonNegative(vals map[string]float64) error {
	for name, v := range vals {
		if v < 0 {
			return fmt.Errorf("%s is negative", name)
		}
	}
	return nil
}
