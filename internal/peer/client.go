package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
)

// ErrTooLarge is wrapped when a response body exceeds the cap of the request.
var ErrTooLarge = errors.New("peer: response larger than allowed")

// StatusError is a non-2xx answer of another domain.
type StatusError struct {
	Method string
	URL    string
	Code   int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: status %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
}

// Media types of what we send and ask for.
const (
	// acceptActivity is what Orb's own client asks for.
	acceptActivity = `application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams", application/json;q=0.9, */*;q=0.1`
)

// ActorStore is the part of the store the actor cache uses (store.Executor).
type ActorStore interface {
	ActorCacheUpsert(ctx context.Context, a store.CachedActor) error
	ActorCacheGet(ctx context.Context, iri string) (store.CachedActor, error)
}

// Client sends signed requests to other domains and resolves their actors and keys. It is safe
// for concurrent use.
type Client struct {
	cfg    Config
	signer *httpsig.Signer
	http   *http.Client
	st     ActorStore
	cache  *lru.Cache[string, cachedActor]
	// keys maps the key ids of cached actors to their IRIs.
	keys *lru.Cache[string, string]
	// failures remembers the key ids that could not be resolved, and resolving shares one
	// resolution of a key among the requests that need it at once.
	failures  *lru.Cache[string, keyFailure]
	resolving singleflight.Group
	m         *metrics
}

// New returns a Client that signs with cfg's key and caches actors in st.
func New(cfg Config, st ActorStore) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new peer client: %w", err)
	}
	signer, err := httpsig.NewSigner(httpsig.SignerConfig{
		KeyID: cfg.KeyID, PrivateKey: cfg.PrivateKey, MaxBodyBytes: activity.MaxActivityBytesDefault, NowFunc: cfg.NowFunc,
	})
	if err != nil {
		return nil, fmt.Errorf("new peer client: %w", err)
	}
	cache, err := lru.New[string, cachedActor](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("new peer client: %w", err)
	}
	keys, err := lru.New[string, string](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("new peer client: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	failures, err := lru.New[string, keyFailure](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("new peer client: %w", err)
	}
	return &Client{cfg: cfg, signer: signer, http: cfg.HTTP, st: st, cache: cache, keys: keys, failures: failures, m: m}, nil
}

// Timeout is the bound of one request.
func (c *Client) Timeout() time.Duration { return c.cfg.Timeout }

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Fetch GETs url, signed, and returns its body: at most maxBytes (more fails with ErrTooLarge);
// a non-2xx answer is a *StatusError.
func (c *Client) Fetch(ctx context.Context, url string, maxBytes int64) ([]byte, error) {
	body, err := c.do(ctx, http.MethodGet, url, nil, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", url, err)
	}
	return body, nil
}

// Post POSTs an activity to url (an inbox), signed; a non-2xx answer is a *StatusError.
func (c *Client) Post(ctx context.Context, url string, body []byte) error {
	if _, err := c.do(ctx, http.MethodPost, url, body, maxAnswerBytes); err != nil {
		return fmt.Errorf("post to %s: %w", url, err)
	}
	return nil
}

func (c *Client) do(ctx context.Context, method, url string, body []byte, maxBytes int64) (_ []byte, err error) {
	start := time.Now()
	outcome := "error"
	defer func() {
		c.m.requests.WithLabelValues(method, outcome).Inc()
		c.m.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
	}()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q is not http or https", req.URL.Scheme)
	}
	req.Header.Set("Accept", acceptActivity)
	if body != nil {
		req.Header.Set("Content-Type", activity.MediaTypeActivity)
	}
	if err := c.signer.Sign(req); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	outcome = strconv.Itoa(resp.StatusCode/100) + "xx"
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
		return nil, &StatusError{Method: method, URL: url, Code: resp.StatusCode}
	}
	if resp.ContentLength > maxBytes {
		outcome = "too_large"
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d allowed", ErrTooLarge, resp.ContentLength, maxBytes)
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		outcome = "error"
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if int64(len(out)) > maxBytes {
		outcome = "too_large"
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, maxBytes)
	}
	return out, nil
}

// IsNotFound reports whether err is a peer's 404 or 410: what it asked for does not exist.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone)
}
