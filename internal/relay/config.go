package relay

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
)

// Defaults of Config.
const (
	// PollIntervalDefault is how often the Publisher looks for an anchor to publish without
	// being told, and the Receiver for waiting anchors whose parent has arrived.
	PollIntervalDefault = time.Second
	// FetchTimeoutDefault bounds reading one anchor's batch files from other domains.
	FetchTimeoutDefault = time.Minute
	// MaxWaitingPerOriginDefault bounds the anchors of one origin that wait for a parent.
	MaxWaitingPerOriginDefault = 10_000
	// MaxCascadeDefault bounds the rounds of waiting anchors tried after one anchor is applied:
	// the depth of a parent chain resolved at once. Deeper chains continue at the next sweep.
	MaxCascadeDefault = 64
	// ReadyBatchDefault is how many waiting anchors one round tries.
	ReadyBatchDefault = 100
	// KeyCacheTTLDefault is how long a resolved did:web document is trusted (Orb: 10 minutes).
	KeyCacheTTLDefault = 10 * time.Minute
	// KeyCacheSizeDefault bounds the did:web documents kept.
	KeyCacheSizeDefault = 1000
)

// Identity is who this domain is.
type Identity struct {
	// ActorIRI is the domain's actor (author of its anchors); FollowersIRI its followers
	// collection, which addresses a Create or Announce to them.
	ActorIRI     string
	FollowersIRI string
	// Endpoint is the external endpoint: /cas/<cid> below it serves this domain's files.
	Endpoint string
	// DID is the domain's did:web, whose document lists Key's public half.
	DID string
	// Key signs anchor credentials.
	Key ed25519.PrivateKey
}

func (id Identity) validate() error {
	var errs []error
	for name, v := range map[string]string{"ActorIRI": id.ActorIRI, "FollowersIRI": id.FollowersIRI, "Endpoint": id.Endpoint, "DID": id.DID} {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s missing", name))
		}
	}
	if len(id.Key) != ed25519.PrivateKeySize {
		errs = append(errs, errors.New("the signing key is not an Ed25519 private key"))
	}
	return errors.Join(errs...)
}

// Config configures a Publisher and a Receiver.
type Config struct {
	Identity Identity
	Profile  sidetree.Profile
	Limits   batchfile.Limits
	// LinkFunc, if set, returns the link of an anchor whose link was fixed before it completed
	// (an anchor offered to witnesses: its credential carries their proofs); ok is false for
	// an anchor whose link the publisher lays out itself.
	LinkFunc func(ctx context.Context, seq int64) (link *activity.Link, ok bool, err error)
	// MediaType of the linkset's data URIs: activity.MediaTypeGzipBase64 (Orb's) by default.
	MediaType           string
	PollInterval        time.Duration
	FetchTimeout        time.Duration
	MaxWaitingPerOrigin int
	MaxCascade          int
	ReadyBatch          int
	KeyCacheTTL         time.Duration
	KeyCacheSize        int
	Logger              *slog.Logger
	Registerer          prometheus.Registerer
}

func (c Config) withDefaults() (Config, error) {
	if err := c.Identity.validate(); err != nil {
		return c, fmt.Errorf("relay config: %w", err)
	}
	c.MediaType = cmp.Or(c.MediaType, activity.MediaTypeGzipBase64)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.FetchTimeout = cmp.Or(c.FetchTimeout, FetchTimeoutDefault)
	c.MaxWaitingPerOrigin = cmp.Or(c.MaxWaitingPerOrigin, MaxWaitingPerOriginDefault)
	c.MaxCascade = cmp.Or(c.MaxCascade, MaxCascadeDefault)
	c.ReadyBatch = cmp.Or(c.ReadyBatch, ReadyBatchDefault)
	c.KeyCacheTTL = cmp.Or(c.KeyCacheTTL, KeyCacheTTLDefault)
	c.KeyCacheSize = cmp.Or(c.KeyCacheSize, KeyCacheSizeDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.PollInterval < 0 || c.FetchTimeout < 0 || c.MaxWaitingPerOrigin < 0 || c.MaxCascade < 0 || c.ReadyBatch < 0 {
		return c, errors.New("relay config: negative interval or bound")
	}
	return c, nil
}
