package devledger

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// Defaults of Config.
const (
	// AddrDefault is where Run listens: the Sawtooth REST API's usual port, loopback only.
	AddrDefault = "127.0.0.1:8008"
	// CommitDelayDefault is how long an accepted batch stays PENDING.
	CommitDelayDefault = 2 * time.Second
	// CommitIntervalDefault is how often Run commits the batches that are due (status queries
	// commit due batches as well, so it bounds only how stale the metrics can be).
	CommitIntervalDefault = 100 * time.Millisecond
	// HangTimeoutDefault bounds a "timeout" fault: the request hangs this long (or until the
	// client gives up) and is then answered 503 "Validator Timed Out".
	HangTimeoutDefault = 60 * time.Second
	// ShutdownTimeoutDefault bounds the graceful shutdown of the HTTP server.
	ShutdownTimeoutDefault = 5 * time.Second
	// MaxBodyDefault bounds a POST body, like the REST API's 10 MB client_max_size.
	MaxBodyDefault = 10 << 20
)

// Config configures a Server. The zero value is a fault-free ledger on AddrDefault.
type Config struct {
	// Addr is the listen address of Run.
	Addr string
	// CommitDelay is how long an accepted batch stays PENDING before it is committed (or found
	// INVALID). Zero means CommitDelayDefault; to commit at once use a tiny delay such as 1ns.
	CommitDelay time.Duration
	// CommitInterval is how often Run commits due batches. Zero means CommitIntervalDefault.
	CommitInterval time.Duration
	// HangTimeout bounds a hung request of the timeout fault. Zero means HangTimeoutDefault.
	HangTimeout time.Duration
	// ShutdownTimeout bounds graceful shutdown. Zero means ShutdownTimeoutDefault.
	ShutdownTimeout time.Duration
	// MaxBody bounds a POST body in bytes. Zero means MaxBodyDefault.
	MaxBody int64
	// FamilyName and FamilyVersion name the one transaction family the ledger processes.
	// Empty means sawtooth.FamilyName and sawtooth.FamilyVersion.
	FamilyName    string
	FamilyVersion string
	// Faults injects failures into batch submissions.
	Faults FaultConfig
	// Logger receives the server's logs. Nil discards them.
	Logger *slog.Logger
	// Registerer receives the server's Prometheus metrics. Nil means a private registry.
	Registerer prometheus.Registerer
	// Gatherer, when set, is served at GET /metrics (useful when the devledger runs alone).
	Gatherer prometheus.Gatherer
	// NowFunc returns the current time. Nil means time.Now; tests set it to move time by hand.
	NowFunc func() time.Time
}

// FaultConfig gives the share, in [0, 1], of batch submissions that meet each fault. The shares
// add up to at most 1; the rest are served normally. The choice for a submission depends only
// on Seed, the ids of the batches in the BatchList and how many times that BatchList was
// submitted before, so a run is reproducible whatever the order requests arrive in, and a
// resubmission draws afresh.
type FaultConfig struct {
	Seed uint64
	// Unavailable: answer 503 "Validator Disconnected"; the batch is not recorded.
	Unavailable float64
	// TooManyRequests: answer 429 "Unable to Accept Batches" (scabbard: 429 without a body);
	// the batch is not recorded.
	TooManyRequests float64
	// BadRequest: answer 400 "Submitted Batches Invalid" although the batch is good; it is not
	// recorded.
	BadRequest float64
	// Timeout: record the batch, then hang until the client gives up (or HangTimeout passes,
	// then answer 503 "Validator Timed Out"), as a validator that took the batch while the
	// REST API lost track of it.
	Timeout float64
	// Lost: answer 202 but never record the batch; its status stays UNKNOWN.
	Lost float64
	// Invalid: record the batch, then find it INVALID when it is due, as if the transaction
	// processor had refused it.
	Invalid float64
}

func (f FaultConfig) shares() []float64 {
	return []float64{f.Unavailable, f.TooManyRequests, f.BadRequest, f.Timeout, f.Lost, f.Invalid}
}

func (f FaultConfig) validate() error {
	var sum float64
	for i, s := range f.shares() {
		if math.IsNaN(s) || s < 0 || s > 1 {
			return fmt.Errorf("fault share %s=%v is not in [0, 1]", faultKinds[i], s)
		}
		sum += s
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("fault shares add up to %v, more than 1", sum)
	}
	return nil
}

// withDefaults returns cfg with every zero field set to its default, or a validation error.
func (c Config) withDefaults() (Config, error) {
	for name, d := range map[string]time.Duration{
		"commit delay": c.CommitDelay, "commit interval": c.CommitInterval,
		"hang timeout": c.HangTimeout, "shutdown timeout": c.ShutdownTimeout,
	} {
		if d < 0 {
			return c, fmt.Errorf("%s %s is negative", name, d)
		}
	}
	if c.MaxBody < 0 {
		return c, errors.New("max body is negative")
	}
	if err := c.Faults.validate(); err != nil {
		return c, err
	}
	c.Addr = cmp.Or(c.Addr, AddrDefault)
	c.CommitDelay = cmp.Or(c.CommitDelay, CommitDelayDefault)
	c.CommitInterval = cmp.Or(c.CommitInterval, CommitIntervalDefault)
	c.HangTimeout = cmp.Or(c.HangTimeout, HangTimeoutDefault)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, ShutdownTimeoutDefault)
	c.MaxBody = cmp.Or(c.MaxBody, MaxBodyDefault)
	c.FamilyName = cmp.Or(c.FamilyName, sawtooth.FamilyName)
	c.FamilyVersion = cmp.Or(c.FamilyVersion, sawtooth.FamilyVersion)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	return c, nil
}

// LogValue shows the settings an operator chose.
func (c Config) LogValue() slog.Value {
	f := c.Faults
	return slog.GroupValue(
		slog.String("addr", cmp.Or(c.Addr, AddrDefault)),
		slog.Duration("commit_delay", cmp.Or(c.CommitDelay, CommitDelayDefault)),
		slog.String("family", cmp.Or(c.FamilyName, sawtooth.FamilyName)+"/"+cmp.Or(c.FamilyVersion, sawtooth.FamilyVersion)),
		slog.Uint64("fault_seed", f.Seed),
		slog.Float64("fault_unavailable", f.Unavailable),
		slog.Float64("fault_too_many_requests", f.TooManyRequests),
		slog.Float64("fault_bad_request", f.BadRequest),
		slog.Float64("fault_timeout", f.Timeout),
		slog.Float64("fault_lost", f.Lost),
		slog.Float64("fault_invalid", f.Invalid),
	)
}
