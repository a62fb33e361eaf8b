package origin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/sidetree"
)

// Local is this domain's resolver (observer.Resolver).
type Local interface {
	Resolve(ctx context.Context, did string) ([]byte, sidetree.ResolutionStatus, error)
	ResolveVersion(ctx context.Context, did, versionID string, versionTime time.Time) ([]byte, sidetree.ResolutionStatus, error)
	ResolveFromOrigin(ctx context.Context, did string, published, unpublished []observer.OriginOperation) ([]byte, sidetree.ResolutionStatus, bool, error)
}

// FetchFunc GETs url from another domain and returns at most maxBytes of its body; a non-2xx
// answer is a *peer.StatusError (peer.Client.Fetch, through the outbound guard).
type FetchFunc func(ctx context.Context, url string, maxBytes int64) ([]byte, error)

// Resolver answers resolutions as Local does, with what a DID's anchor origin has merged in when
// Orb's rules allow it (see the package doc). It serves the Sidetree API in place of Local.
type Resolver struct {
	cfg   Config
	local Local
	fetch FetchFunc
	self  string
	m     *metrics

	// inFlight holds a slot per resolution asking an origin (Config.MaxInFlight).
	inFlight chan struct{}

	mu          sync.Mutex
	origins     map[string]remembered // by base URL
	discovering singleflight.Group
}

// New returns a Resolver over local that asks origins through fetch.
func New(cfg Config, local Local, fetch FetchFunc) (*Resolver, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if local == nil || fetch == nil {
		return nil, errors.New("origin: a local resolver and a fetch are required")
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Resolver{cfg: cfg, local: local, fetch: fetch, self: hostBase(cfg.Self), m: m, inFlight: make(chan struct{}, cfg.MaxInFlight), origins: map[string]remembered{}}, nil
}

// Resolve is Local's resolution with the anchor origin's answer merged in.
func (r *Resolver) Resolve(ctx context.Context, did string) ([]byte, sidetree.ResolutionStatus, error) {
	body, status, err := r.local.Resolve(ctx, did)
	if err != nil || status != sidetree.ResolutionFound {
		return body, status, err
	}
	return r.withOrigin(ctx, did, body, status)
}

// ResolveVersion is Local's; the latest version (neither versionID nor versionTime) has the
// anchor origin's answer merged in.
func (r *Resolver) ResolveVersion(ctx context.Context, did, versionID string, versionTime time.Time) ([]byte, sidetree.ResolutionStatus, error) {
	body, status, err := r.local.ResolveVersion(ctx, did, versionID, versionTime)
	if err != nil || status != sidetree.ResolutionFound || versionID != "" || !versionTime.IsZero() {
		return body, status, err
	}
	return r.withOrigin(ctx, did, body, status)
}

// withOrigin asks the DID's anchor origin and returns the merged result, or the local one.
// Nothing the origin does makes it fail: a local error of the merge is the only error.
func (r *Resolver) withOrigin(ctx context.Context, did string, body []byte, status sidetree.ResolutionStatus) ([]byte, sidetree.ResolutionStatus, error) {
	if unpublishedName(did) {
		return body, status, nil
	}
	local, err := parseResult(body)
	if err != nil || !local.published() {
		// Not a did:orb result, or one of a DID not anchored here (a long form names any
		// anchorOrigin its client likes): there is nothing to merge into, so no origin to ask.
		return body, status, nil
	}
	origin := local.anchorOrigin()
	base := hostBase(origin)
	if base == "" || base == r.self {
		return body, status, nil
	}
	if r.failing(base) {
		r.m.resolutions.WithLabelValues(outcomeSkipped).Inc()
		return body, status, nil
	}
	select {
	case r.inFlight <- struct{}{}:
		defer func() { <-r.inFlight }()
	default:
		r.m.resolutions.WithLabelValues(outcomeBusy).Inc()
		return body, status, nil
	}
	start := time.Now()
	merged, mergedStatus, outcome, err := r.ask(ctx, did, base, origin)
	r.m.duration.Observe(time.Since(start).Seconds())
	r.m.resolutions.WithLabelValues(outcome).Inc()
	if err != nil {
		return nil, 0, err
	}
	if merged == nil {
		return body, status, nil
	}
	return merged, mergedStatus, nil
}

// ask resolves did at the origin at base and merges its answer; merged is nil when the local
// result stands. err is only a local failure.
func (r *Resolver) ask(ctx context.Context, did, base, origin string) (merged []byte, status sidetree.ResolutionStatus, outcome string, err error) {
	askCtx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	answer, err := r.resolveAt(askCtx, base, did)
	if err != nil {
		if ctx.Err() != nil {
			// The request itself ended: nothing is the origin's fault.
			return nil, 0, outcomeUnreachable, nil
		}
		// An origin that cannot be found (no did:orb endpoints, or out of protocol) fails every
		// resolution alike, so it is remembered as failing; so is one that does not answer. A
		// resolution it refuses (4xx) or answers out of protocol concerns that DID only.
		discovery := errors.Is(err, errDiscovery)
		outcome = outcomeUnreachable
		switch {
		case errors.Is(err, errInvalid):
			outcome = outcomeInvalid
			r.cfg.Logger.WarnContext(ctx, "anchor origin answered out of protocol; resolving locally", "did", did, "origin", base, "error", err)
		case isClientError(err) && !discovery:
			r.cfg.Logger.DebugContext(ctx, "anchor origin does not resolve the DID", "did", did, "origin", base, "error", err)
			return nil, 0, outcomeUnknown, nil
		}
		if discovery || outcome == outcomeUnreachable {
			r.failed(base)
			r.cfg.Logger.InfoContext(ctx, "anchor origin failed; resolving locally, and not asking it again for a while",
				"did", did, "origin", base, "retry_after", r.cfg.FailureTTL, "error", err)
		}
		return nil, 0, outcome, nil
	}
	if got := answer.anchorOrigin(); got != origin {
		r.cfg.Logger.WarnContext(ctx, "anchor origin's answer ignored", "did", did, "origin", base, "differs", "anchorOrigin", "theirs", got, "ours", origin)
		return nil, 0, outcomeMismatch, nil
	}
	published, unpublished, err := answer.operations(r.cfg.MaxOperations)
	if err != nil {
		r.cfg.Logger.WarnContext(ctx, "anchor origin answered out of protocol; resolving locally", "did", did, "origin", base, "error", err)
		return nil, 0, outcomeInvalid, nil
	}
	body, status, ok, err := r.local.ResolveFromOrigin(ctx, did, published, unpublished)
	if err != nil {
		return nil, 0, outcomeCurrent, fmt.Errorf("merge the anchor origin's operations: %w", err)
	}
	if !ok {
		return nil, 0, outcomeCurrent, nil
	}
	mine, err := parseResult(body)
	if err != nil {
		return nil, 0, outcomeCurrent, fmt.Errorf("merge the anchor origin's operations: %w", err)
	}
	if what := agree(answer, mine); what != "" {
		r.cfg.Logger.WarnContext(ctx, "anchor origin's answer ignored", "did", did, "origin", base, "differs", what,
			"published", len(published), "unpublished", len(unpublished))
		return nil, 0, outcomeMismatch, nil
	}
	return body, status, outcomeMerged, nil
}

// resolveAt resolves did at the origin's resolution endpoints, the first that answers.
func (r *Resolver) resolveAt(ctx context.Context, base, did string) (*result, error) {
	eps, err := r.endpoints(ctx, base)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, ep := range eps {
		body, err := r.fetch(ctx, ep+"/"+did, r.cfg.MaxAnswerBytes)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		return parseAnswer(body, r.cfg.MaxOperations)
	}
	return nil, errors.Join(errs...)
}

// isClientError reports whether err is (or, of several endpoints', first holds) a 4xx answer:
// the origin is up and does not resolve the name.
func isClientError(err error) bool {
	var se *peer.StatusError
	return errors.As(err, &se) && se.Code >= 400 && se.Code < 500
}
