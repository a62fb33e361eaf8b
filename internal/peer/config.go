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
	// Transport sends the requests; nil means a clone of http.DefaultTransport.
	Transport http.RoundTripper
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
	if len(c.PrivateKey) != ed25519.PrivateKeySize {
		return fmt.Errorf("private key has %d bytes, want %d", len(c.PrivateKey), ed25519.PrivateKeySize)
	}
	for name, d := range map[string]time.Duration{"timeout": c.Timeout, "cache TTL": c.CacheTTL, "max stale": c.MaxStale} {
		if d < 0 {
			return fmt.Errorf("%s %s is negative", name, d)
		}
	}
	if c.CacheSize < 0 || c.MaxDocumentBytes < 0 {
		return fmt.Errorf("cache size %d and max document bytes %d must not be negative", c.CacheSize, c.MaxDocumentBytes)
	}
	return nil
}
