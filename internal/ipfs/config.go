package ipfs

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	// RequestTimeoutDefault bounds one request, from sending it to reading the last byte of the
	// answer. An online node asked for content nobody provides searches until it is cancelled,
	// so the bound is what turns "not found anywhere" into an error.
	RequestTimeoutDefault = 30 * time.Second
	// MaxResponseBytesDefault bounds the JSON answers (add, pin, version): each is a few hundred
	// bytes, so anything near this is not Kubo talking.
	MaxResponseBytesDefault = 1 << 20
)

// Config configures a Client. The zero value of every field but URL means its default.
type Config struct {
	// URL is the base of the node's RPC API, Orb's --ipfs-url: "http://127.0.0.1:5001". A path
	// is kept (for a node behind a proxy); "/api/v0" is appended to it.
	URL string
	// RequestTimeout bounds each request; a shorter deadline on the caller's context wins.
	RequestTimeout time.Duration
	// MaxResponseBytes bounds the JSON answers; Cat's limit is its argument.
	MaxResponseBytes int64
	// HTTPClient sends the requests; nil means a client of the package's own whose idle
	// connections Close releases.
	HTTPClient *http.Client

	// Logger receives the client's lines; the caller gives it its component attribute.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() (Config, *url.URL, error) {
	if c.RequestTimeout < 0 {
		return c, nil, fmt.Errorf("new ipfs client: request timeout %s is negative", c.RequestTimeout)
	}
	if c.MaxResponseBytes < 0 {
		return c, nil, fmt.Errorf("new ipfs client: max response bytes %d is negative", c.MaxResponseBytes)
	}
	base, err := parseURL(c.URL)
	if err != nil {
		return c, nil, fmt.Errorf("new ipfs client: %w", err)
	}
	c.RequestTimeout = cmp.Or(c.RequestTimeout, RequestTimeoutDefault)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, MaxResponseBytesDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c, base, nil
}

// parseURL accepts an http(s) URL with a host and no query, and returns it with "/api/v0"
// appended to its path.
func parseURL(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, errors.New("url is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %q: scheme must be http or https (the RPC API, not a multiaddr)", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("url %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("url %q: query, fragment and user info are not allowed", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v0"
	u.RawPath = ""
	return u, nil
}

// LogValue shows the effective settings.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("url", c.URL),
		slog.Duration("request_timeout", c.RequestTimeout),
		slog.Int64("max_response_bytes", c.MaxResponseBytes),
	)
}
