package origin

import (
	"cmp"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config fields left zero.
const (
	// TimeoutDefault bounds asking an origin about one resolution, its discovery included: what
	// a slow origin can add to a resolution.
	TimeoutDefault = 2 * time.Second
	// EndpointTTLDefault is how long an origin's resolution endpoints are remembered.
	EndpointTTLDefault = 10 * time.Minute
	// FailureTTLDefault is how long an origin that failed is not asked again.
	FailureTTLDefault = time.Minute
	// MaxAnswerBytesDefault bounds an origin's resolution result: a document (64 KiB at most
	// here) and the lists of up to 1,000 operations of 2,500 bytes, in base64.
	MaxAnswerBytesDefault = 4 << 20
	// MaxOperationsDefault bounds the operations an origin may list in one answer; an answer
	// with more is ignored.
	MaxOperationsDefault = 1100
	// MaxInFlightDefault bounds the resolutions asking an origin at once. Each holds an answer
	// (up to MaxAnswerBytes) and merges it, checking the signature of every listed operation
	// that opens a commitment: 1,100 forged ones took a second of CPU. A resolution beyond it
	// is answered locally at once, so what clients asking about DIDs of other domains can take
	// of memory, CPU and the outbound guard's slots (which deliveries and witnessing share)
	// does not grow with their number.
	MaxInFlightDefault = 4
)

// maxDiscoveryBytes bounds /.well-known/did-orb and a WebFinger answer.
const maxDiscoveryBytes = 64 << 10

// maxOrigins bounds the origins whose endpoints or failures are remembered.
const maxOrigins = 10_000

// Config configures a Resolver.
type Config struct {
	// Self is this domain's external endpoint: a DID whose anchor origin is on its host is
	// resolved locally only. Required.
	Self string
	// Timeout, EndpointTTL, FailureTTL, MaxAnswerBytes, MaxOperations and MaxInFlight: see
	// the defaults.
	Timeout        time.Duration
	EndpointTTL    time.Duration
	FailureTTL     time.Duration
	MaxAnswerBytes int64
	MaxOperations  int
	MaxInFlight    int
	// NowFunc is the clock of what is remembered; nil means time.Now.
	NowFunc    func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.Timeout = cmp.Or(c.Timeout, TimeoutDefault)
	c.EndpointTTL = cmp.Or(c.EndpointTTL, EndpointTTLDefault)
	c.FailureTTL = cmp.Or(c.FailureTTL, FailureTTLDefault)
	c.MaxAnswerBytes = cmp.Or(c.MaxAnswerBytes, MaxAnswerBytesDefault)
	c.MaxOperations = cmp.Or(c.MaxOperations, MaxOperationsDefault)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, MaxInFlightDefault)
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
	if hostBase(c.Self) == "" {
		return errors.New("origin: Self must be an http(s) URL")
	}
	if c.Timeout < 0 || c.EndpointTTL < 0 || c.FailureTTL < 0 || c.MaxAnswerBytes < 0 || c.MaxOperations < 0 || c.MaxInFlight < 0 {
		return errors.New("origin: negative limit")
	}
	return nil
}
