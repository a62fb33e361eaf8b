package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/activity"
)

// Discovery bounds.
const (
	// discoveryQueue is how many DIDs may wait for discovery; beyond, a request is dropped (the
	// resolver answers "not found" anyway, and a client retries).
	discoveryQueue = 64
	// discoveryRepeat is how long a DID discovered (or tried) is not tried again.
	discoveryRepeat = time.Minute
	// discoveryHops bounds how often an anchor origin may name another (Orb follows them until
	// they stop changing, without bound).
	discoveryHops = 3
	// maxJRDBytes bounds a WebFinger answer.
	maxJRDBytes = 64 << 10
	// discoveryTimeout bounds one discovery.
	discoveryTimeout = 30 * time.Second
	// discoveryAncestors bounds the anchors one discovery fetches besides the DID's canonical
	// one: its parents, theirs, and so on (Orb fetches every unprocessed ancestor, without a
	// bound of its own; discoveryTimeout bounds it too).
	discoveryAncestors = 100
)

// Discoverer is Orb's DID discovery (--enable-did-discovery): a did:orb DID this domain does not
// hold, asked for under a name that says where its anchor lives (a domain hint, or a hashlink
// with a link), is looked up at that domain's WebFinger, which names the DID's anchor origin and
// the hashlink of its canonical anchor; the anchor is then fetched from the origin and applied as
// an anchor of the origin's (Receiver: the credential is checked against the origin's key, the
// files against their hashes), and so is each ancestor it needs first (its parents in
// related.up, theirs, and so on), as Orb's anchor handler fetches them. The resolution that
// asked answers "not found"; a later one finds the DID, as at Orb. Every request goes through
// the same fetch as the rest of federation (the outbound guard, its size caps and refusals).
type Discoverer struct {
	recv   *Receiver
	fetch  FetchFunc
	logger *slog.Logger
	reqs   chan string

	mu   sync.Mutex
	seen map[string]time.Time // location|suffix → when last tried
}

// NewDiscoverer returns a Discoverer applying what it finds through recv.
func NewDiscoverer(recv *Receiver, fetch FetchFunc, logger *slog.Logger) *Discoverer {
	return &Discoverer{recv: recv, fetch: fetch, logger: logger, reqs: make(chan string, discoveryQueue), seen: map[string]time.Time{}}
}

// Request asks for the discovery of did without waiting for it. A DID tried within the last
// minute, a name that says nowhere to look, or a full queue drop the request.
func (d *Discoverer) Request(did string) {
	if _, _, err := discoveryLocation(did); err != nil {
		return
	}
	d.mu.Lock()
	now := time.Now()
	if t, ok := d.seen[did]; ok && now.Sub(t) < discoveryRepeat {
		d.mu.Unlock()
		return
	}
	if len(d.seen) > 10*discoveryQueue {
		for k, t := range d.seen {
			if now.Sub(t) >= discoveryRepeat {
				delete(d.seen, k)
			}
		}
	}
	d.seen[did] = now
	d.mu.Unlock()
	select {
	case d.reqs <- did:
	default:
	}
}

// Run discovers the requested DIDs one at a time until ctx is done.
func (d *Discoverer) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case did := <-d.reqs:
			if _, err := d.runOnce(ctx, did); err != nil && ctx.Err() == nil {
				d.logger.WarnContext(ctx, "DID discovery failed", "did", did, "error", err)
			}
		}
	}
}

// runOnce discovers one DID and returns the anchor applied (or found waiting for its parents).
func (d *Discoverer) runOnce(ctx context.Context, did string) (Applied, error) {
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	base, _, err := discoveryLocation(did)
	if err != nil {
		return Applied{}, err
	}
	var jrd discoveryJRD
	for hop := 0; ; hop++ {
		if jrd, err = d.webFinger(ctx, base, did); err != nil {
			return Applied{}, err
		}
		origin := originBase(jrd.Properties.AnchorOrigin)
		if origin == "" || origin == base {
			break
		}
		if hop == discoveryHops {
			return Applied{}, fmt.Errorf("discover %s: the anchor origin moved more than %d times", did, discoveryHops)
		}
		base = origin
	}
	via, actor := jrd.link("via"), jrd.link("service")
	if via == "" || actor == "" {
		return Applied{}, fmt.Errorf("discover %s: %s names no anchor (via) or no actor (service)", did, base)
	}
	if hostBase(actor) != base {
		return Applied{}, fmt.Errorf("discover %s: the actor %s is not on %s", did, actor, base)
	}
	if _, err := activity.ParseHashlink(via); err != nil {
		return Applied{}, fmt.Errorf("discover %s: via: %w", did, err)
	}
	res, ancestors, err := d.applyChain(ctx, via, actor)
	if err != nil {
		return res, fmt.Errorf("discover %s: %w", did, err)
	}
	d.logger.InfoContext(ctx, "DID discovered", "did", did, "anchor", via, "origin", actor, "outcome", res.Outcome, "ancestors", ancestors)
	return res, nil
}

// applyChain applies the anchor named by hashlink, fetched from actor's host, with every
// ancestor it needs first: an anchor that waits for a parent has the parent applied (and that
// one's, and so on), then is applied again, until it is applied or a parent cannot be had. It
// returns the anchor's outcome and how many ancestors were fetched. A parent without a link on
// actor's host is not fetched (the anchor waits for it, as one whose parent is missing does):
// the linkset of an anchor is fetched only from its sender's host.
func (d *Discoverer) applyChain(ctx context.Context, hashlink, actor string) (Applied, int, error) {
	// Depth first: the top of the stack is applied; a missing parent goes on top of it, and the
	// anchor is applied again once the parent is off (a batch may name several parents).
	stack := []string{hashlink}
	tried := map[string]bool{} // applied once already: it is in the waiting table
	ancestors := 0
	var res Applied
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		raw, err := json.Marshal(activity.NewAnchorEvent(top, nil))
		if err != nil {
			return Applied{}, ancestors, err
		}
		got, err := d.recv.apply(ctx, event{raw: raw, sender: actor, waiting: tried[top]})
		if err != nil {
			return got, ancestors, fmt.Errorf("anchor %s: %w", top, err)
		}
		tried[top] = true
		if top == hashlink {
			res = got
		}
		if got.Outcome != outcomeWaiting {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := got.WaitingFor
		switch {
		case slices.Contains(stack, parent):
			return res, ancestors, fmt.Errorf("anchor %s: its ancestors name it again", parent)
		case ancestors == discoveryAncestors:
			return res, ancestors, fmt.Errorf("more than %d ancestors are missing", discoveryAncestors)
		case !linksTo(parent, hostBase(actor)):
			// Anchored elsewhere (the DID's origin moved): it waits, as any anchor whose parent
			// is missing does.
			return res, ancestors, nil
		}
		ancestors++
		stack = append(stack, parent)
	}
	return res, ancestors, nil
}

// linksTo reports whether hashlink has a link on base.
func linksTo(hashlink, base string) bool {
	h, err := activity.ParseHashlink(hashlink)
	if err != nil {
		return false
	}
	for _, l := range h.Links {
		if hostBase(l) == base {
			return true
		}
	}
	return false
}

// discoveryJRD is the part of Orb's WebFinger answer for a DID that discovery reads.
type discoveryJRD struct {
	Properties struct {
		AnchorOrigin string `json:"https://trustbloc.dev/ns/anchor-origin"`
	} `json:"properties"`
	Links []struct {
		Rel  string `json:"rel"`
		Href string `json:"href"`
	} `json:"links"`
}

func (j discoveryJRD) link(rel string) string {
	for _, l := range j.Links {
		if l.Rel == rel {
			return l.Href
		}
	}
	return ""
}

func (d *Discoverer) webFinger(ctx context.Context, base, did string) (discoveryJRD, error) {
	body, err := d.fetch(ctx, base+"/.well-known/webfinger?resource="+url.QueryEscape(did), maxJRDBytes)
	if err != nil {
		return discoveryJRD{}, fmt.Errorf("webfinger of %s at %s: %w", did, base, err)
	}
	var jrd discoveryJRD
	if err := json.Unmarshal(body, &jrd); err != nil {
		return discoveryJRD{}, fmt.Errorf("webfinger of %s at %s: %w", did, base, err)
	}
	return jrd, nil
}

// discoveryLocation returns the base URL a did:orb name says its anchor lives at: a domain hint
// (did:orb:https:<domain>:…), or the host of a hashlink's first link (did:orb:hl:<hash>:<meta>:…).
// A name that says nowhere (a bare anchor hash, uAAA) cannot be discovered, as at Orb.
func discoveryLocation(did string) (base, suffix string, err error) {
	rest, ok := strings.CutPrefix(did, "did:orb:")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return "", "", errors.New("not a did:orb name with a hint")
	}
	hint, suffix := rest[:i], rest[i+1:]
	switch {
	case strings.HasPrefix(hint, "https:"), strings.HasPrefix(hint, "http:"):
		scheme, tail, _ := strings.Cut(hint, ":")
		j := strings.LastIndexByte(tail, ':')
		if j <= 0 || strings.HasSuffix(tail, ":uAAA") {
			return "", "", errors.New("a domain hint without an anchor")
		}
		if b := hostBase(scheme + "://" + tail[:j]); b != "" {
			return b, suffix, nil
		}
	case strings.HasPrefix(hint, "hl:"):
		h, err := activity.ParseHashlink(hint)
		if err != nil {
			return "", "", err
		}
		for _, l := range h.Links {
			if b := hostBase(l); b != "" {
				return b, suffix, nil
			}
		}
	}
	return "", "", errors.New("the name says nowhere to look")
}

// originBase is the base URL of an anchor origin given as a URL ("" for a did:web or ipns
// origin, which discovery does not follow).
func originBase(origin string) string {
	if !strings.HasPrefix(origin, "http://") && !strings.HasPrefix(origin, "https://") {
		return ""
	}
	return hostBase(origin)
}
