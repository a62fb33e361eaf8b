package peer

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/activity"
)

// Defaults of Config fields left zero.
const (
	// TimeoutDefault bounds one request to another domain, connection included.
	TimeoutDefault = 10 * time.Second
	// CacheTTLDefault is how long a fetched actor document is fresh (Orb's
	// apclient-cache-expiration).
	CacheTTLDefault = 10 * time.Minute
	// CacheSizeDefault bounds the actor documents kept in memory.
	CacheSizeDefault = 1000
	// MaxStaleDefault is how long past its TTL a cached actor is still used when fetching it
	// again fails (Orb serves stale entries for hours).
	MaxStaleDefault = 6 * time.Hour
	// MaxDocumentBytesDefault bounds an actor or key document.
	MaxDocumentBytesDefault = activity.MaxActivityBytesDefault
	// KeyFailureTTLDefault is how long a key that could not be resolved is answered from
	// memory, without another fetch: a request signed with a failing keyId costs one fetch a
	// minute, however often it comes, and a peer that was briefly down is verified again soon.
	KeyFailureTTLDefault = time.Minute
)

// maxAnswerBytes bounds what is read of the answer to a POST: only its status matters.
const maxAnswerBytes = 64 << 10

// Config configures a Client.
type Config struct {
	// KeyID names our signing key in the signatures (<actor>/keys/main-key). Required.
	KeyID string
	// PrivateKey signs every request. Required.
	PrivateKey ed25519.PrivateKey
	// Timeout bounds each request.
	Timeout time.Duration
	// CacheTTL, CacheSize and MaxStale govern the actor cache (see the package doc).
	CacheTTL  time.Duration
	CacheSize int
	MaxStale  time.Duration
	// MaxDocumentBytes bounds actor and key documents.
	MaxDocumentBytes int64
	// KeyFailureTTL is how long a key resolution that failed is remembered (at most CacheSize
	// keys).
	KeyFailureTTL time.Duration
	// HTTP sends the requests: the outbound guard's client (egress.Guard.Client), which
	// checks every destination, follows no redirects and caps the requests in flight. Required.
	HTTP *http.Client
	// NowFunc is the clock of the cache and of the Date header; nil means time.Now.
	NowFunc    func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.Timeout = cmp.Or(c.Timeout, TimeoutDefault)
	c.CacheTTL = cmp.Or(c.CacheTTL, CacheTTLDefault)
	c.CacheSize = cmp.Or(c.CacheSize, CacheSizeDefault)
	c.MaxStale = cmp.Or(c.MaxStale, MaxStaleDefault)
	c.MaxDocumentBytes = cmp.Or(c.MaxDocumentBytes, MaxDocumentBytesDefault)
	c.KeyFailureTTL = cmp.Or(c.KeyFailureTTL, KeyFailureTTLDefault)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	if c.KeyID == "" {
		return errors.New("key id is empty")
	}
	if c.HTTP == nil {
		return errors.New("no HTTP client: requests to other domains go through the outbound guard")
	}
	if len(c.PrivateKey) != ed25519.PrivateKeySize {
		return fmt.Errorf("private key has %d bytes, want %d", len(c.PrivateKey), ed25519.PrivateKeySize)
	}
	for name, d := range map[string]time.Duration{"timeout": c.Timeout, "cache TTL": c.CacheTTL, "max stale": c.MaxStale, "key failure TTL": c.KeyFailureTTL} {
		if d < 0 {
			return fmt.Errorf("%s %s is negative", name, d)
		}
	}
	if c.CacheSize < 0 || c.MaxDocumentBytes < 0 {
		return fmt.Errorf("cache size %d and max document bytes %d must not be negative", c.CacheSize, c.MaxDocumentBytes)
	}
	return nil
}
