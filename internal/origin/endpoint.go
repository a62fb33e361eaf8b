package origin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// remembered is what the Resolver keeps of one origin: its resolution endpoints, or when it
// last failed.
type remembered struct {
	endpoints []string
	failed    bool
	until     time.Time
}

// endpoints returns the resolution endpoints of the origin at base, from memory or found the
// way Orb's client finds them: /.well-known/did-orb names the resolution endpoint, and WebFinger
// about it lists the endpoints to use (the self link and alternates; only those on the origin's
// own host are kept, so an origin cannot send us elsewhere). Concurrent lookups of one origin
// share one.
func (r *Resolver) endpoints(ctx context.Context, base string) ([]string, error) {
	now := r.cfg.NowFunc()
	r.mu.Lock()
	m, ok := r.origins[base]
	r.mu.Unlock()
	if ok && now.Before(m.until) && !m.failed {
		return m.endpoints, nil
	}
	ch := r.discovering.DoChan(base, func() (any, error) {
		// The lookup serves every resolution that joins it, so the client that started it
		// leaving does not end it (its cancellation would fail the others, which would take
		// the origin for failing); the timeout alone bounds it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Timeout)
		defer cancel()
		eps, err := r.discover(ctx, base)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errDiscovery, err)
		}
		r.remember(base, remembered{endpoints: eps, until: r.cfg.NowFunc().Add(r.cfg.EndpointTTL)})
		return eps, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]string), nil
	case <-ctx.Done():
		// The lookup this one joined goes on for the others, within the timeout.
		return nil, fmt.Errorf("discover the resolution endpoint of %s: %w", base, ctx.Err())
	}
}

func (r *Resolver) discover(ctx context.Context, base string) ([]string, error) {
	body, err := r.fetch(ctx, base+"/.well-known/did-orb", maxDiscoveryBytes)
	if err != nil {
		return nil, err
	}
	var known struct {
		ResolutionEndpoint string `json:"resolutionEndpoint"`
	}
	if err := json.Unmarshal(body, &known); err != nil {
		return nil, fmt.Errorf("%w: /.well-known/did-orb of %s: %w", errInvalid, base, err)
	}
	if hostBase(known.ResolutionEndpoint) != base {
		return nil, fmt.Errorf("%w: %s names a resolution endpoint %q off its host", errInvalid, base, known.ResolutionEndpoint)
	}
	body, err = r.fetch(ctx, base+"/.well-known/webfinger?resource="+url.PathEscape(known.ResolutionEndpoint), maxDiscoveryBytes)
	if err != nil {
		return nil, err
	}
	var jrd struct {
		Links []struct {
			Rel  string `json:"rel"`
			Href string `json:"href"`
		} `json:"links"`
	}
	if err := json.Unmarshal(body, &jrd); err != nil {
		return nil, fmt.Errorf("%w: WebFinger of %s about its resolution endpoint: %w", errInvalid, base, err)
	}
	var eps []string
	for _, l := range jrd.Links {
		if (l.Rel == "self" || l.Rel == "alternate") && hostBase(l.Href) == base && len(eps) < 4 {
			eps = append(eps, strings.TrimRight(l.Href, "/"))
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Errorf("%w: WebFinger of %s names no resolution endpoint on its host", errInvalid, base)
	}
	return eps, nil
}

// failed remembers that the origin at base failed: it is not asked again for FailureTTL.
func (r *Resolver) failed(base string) {
	r.remember(base, remembered{failed: true, until: r.cfg.NowFunc().Add(r.cfg.FailureTTL)})
}

// failing reports whether the origin at base failed within FailureTTL.
func (r *Resolver) failing(base string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.origins[base]
	return ok && m.failed && r.cfg.NowFunc().Before(m.until)
}

func (r *Resolver) remember(base string, m remembered) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.origins) >= maxOrigins {
		now := r.cfg.NowFunc()
		for k, v := range r.origins {
			if !now.Before(v.until) {
				delete(r.origins, k)
			}
		}
		for k := range r.origins { // still full: drop an arbitrary one
			if len(r.origins) < maxOrigins {
				break
			}
			delete(r.origins, k)
		}
	}
	r.origins[base] = m
}

var (
	// errInvalid marks an answer that is not what the protocol says: the origin's fault.
	errInvalid = errors.New("invalid answer")
	// errDiscovery marks a failure to find the origin's resolution endpoints.
	errDiscovery = errors.New("discover the resolution endpoints")
)

// hostBase is scheme://host[:port] of an http(s) URL, "" for anything else.
func hostBase(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + strings.ToLower(u.Host)
}
