package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The witness log in WebFinger. Orb advertises a domain's log with the ledger-type property and
// a link of relation "vct" to the log; we do the same, with a ledger type of our own: Orb's
// value, "vct-v1", promises the VCT REST API (add-vc, get-sth, get-proof-by-hash), which an
// Orb would then call, and our log serves the tlog-tiles read API instead
// (docs/design/witness-log.md).
const (
	// LogPath is where the witness log's read API is served, under the external endpoint.
	LogPath = "/log"
	// LedgerTypeProperty is Orb's WebFinger property naming the kind of a domain's log.
	LedgerTypeProperty = "https://trustbloc.dev/ns/ledger-type"
	// LedgerTypeTLogTiles is our log's kind: a C2SP tlog-tiles log whose checkpoints the domain
	// key signs.
	LedgerTypeTLogTiles = "tlog-tiles"
	// LogRelation is the relation of the link to the log (Orb's).
	LogRelation = "vct"
)

// Bounds of reading another domain's WebFinger for its log.
const (
	// webFingerMaxBytes bounds a WebFinger answer: a handful of links and properties.
	webFingerMaxBytes = 64 << 10
	// peerLogCacheTTL is how long a domain's answer is remembered (Orb's WebFinger
	// client keeps its ledger types five minutes).
	peerLogCacheTTL = 5 * time.Minute
	// peerLogCacheSize bounds the remembered answers.
	peerLogCacheSize = 1024
)

// PeerLog is another domain's witness log as its WebFinger advertises it.
type PeerLog struct {
	// URL is the root of the log's tlog-tiles read API, e.g. https://b.example/log.
	URL string
	// Origin names the log in its checkpoints: the URL without its scheme, e.g.
	// b.example/log (the rule the domain's own log follows).
	Origin string
}

type cachedPeerLog struct {
	log     PeerLog
	ok      bool
	fetched time.Time
}

// peerLogs remembers what other domains' WebFinger said about their logs.
type peerLogs struct {
	mu      sync.Mutex
	entries map[string]cachedPeerLog
}

// PeerLog reads the WebFinger of the domain of actor (an actor IRI) and reports whether it
// keeps a witness log we can read, and where. A domain that advertises no log, or a log of
// another type (an Orb's VCT log), has none for us: ok is false and err nil. An error means
// the answer could not be had (the domain did not answer, or answered nonsense); callers
// decide whether that counts as no log. Answers are remembered for peerLogCacheTTL;
// errors are not.
//
// Only a log served by the domain itself (same scheme and host as the actor) is accepted: its
// checkpoints are verified with the actor's key, and a domain has no business naming another
// host's log as its own.
func (s *Service) PeerLog(ctx context.Context, actor string) (PeerLog, bool, error) {
	now := s.cfg.NowFunc()
	s.peerLogs.mu.Lock()
	e, hit := s.peerLogs.entries[actor]
	s.peerLogs.mu.Unlock()
	if hit && now.Sub(e.fetched) < peerLogCacheTTL {
		return e.log, e.ok, nil
	}
	l, ok, err := readPeerLog(ctx, s.client.Fetch, actor)
	if err != nil {
		return PeerLog{}, false, err
	}
	s.peerLogs.mu.Lock()
	defer s.peerLogs.mu.Unlock()
	if s.peerLogs.entries == nil {
		s.peerLogs.entries = map[string]cachedPeerLog{}
	}
	if len(s.peerLogs.entries) >= peerLogCacheSize {
		for k := range s.peerLogs.entries { // evict an arbitrary entry: bounded memory, no bookkeeping
			delete(s.peerLogs.entries, k)
			break
		}
	}
	s.peerLogs.entries[actor] = cachedPeerLog{log: l, ok: ok, fetched: now}
	return l, ok, nil
}

// fetchFunc GETs a URL of another domain, reading at most maxBytes: peer.Client.Fetch, which
// signs the request and bounds its time.
type fetchFunc func(ctx context.Context, url string, maxBytes int64) ([]byte, error)

func readPeerLog(ctx context.Context, fetch fetchFunc, actor string) (PeerLog, bool, error) {
	a, err := url.Parse(actor)
	if err != nil || (a.Scheme != "https" && a.Scheme != "http") || a.Host == "" {
		return PeerLog{}, false, fmt.Errorf("log of %q: not an http(s) actor IRI", actor)
	}
	wf := a.Scheme + "://" + a.Host + "/.well-known/webfinger?resource=" + url.QueryEscape(actor)
	body, err := fetch(ctx, wf, webFingerMaxBytes)
	if err != nil {
		return PeerLog{}, false, fmt.Errorf("log of %s: %w", actor, err)
	}
	var doc jrd
	if err := json.Unmarshal(body, &doc); err != nil {
		return PeerLog{}, false, fmt.Errorf("log of %s: WebFinger answer: %w", actor, err)
	}
	if lt, _ := doc.Properties[LedgerTypeProperty].(string); lt != LedgerTypeTLogTiles {
		return PeerLog{}, false, nil
	}
	var href string
	for _, l := range doc.Links {
		if l.Rel == LogRelation {
			href = l.Href
			break
		}
	}
	l, err := peerLogAt(a, href)
	if err != nil {
		return PeerLog{}, false, fmt.Errorf("log of %s: %w", actor, err)
	}
	return l, true, nil
}

// peerLogAt checks the advertised log URL href against the actor IRI a and derives the log's
// origin from it.
func peerLogAt(a *url.URL, href string) (PeerLog, error) {
	if href == "" {
		return PeerLog{}, errors.New("the ledger type is " + LedgerTypeTLogTiles + " but no " + LogRelation + " link names the log")
	}
	u, err := url.Parse(href)
	if err != nil || u.Scheme != a.Scheme || !strings.EqualFold(u.Host, a.Host) || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return PeerLog{}, fmt.Errorf("the log %q is not an URL of the domain's own %s://%s", href, a.Scheme, a.Host)
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	origin := strings.ToLower(u.Host) + path
	if strings.ContainsAny(origin, "+ \t\r\n") {
		return PeerLog{}, fmt.Errorf("the log %q cannot name a checkpoint origin", href)
	}
	return PeerLog{URL: u.Scheme + "://" + u.Host + path, Origin: origin}, nil
}
