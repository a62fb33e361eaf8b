package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/ratelimit"
)

// The inbox's bounds against a peer that posts without end. In the order POST /inbox applies
// them: a body cap per activity type, checked before any signature work (413); a rate per
// actor and per domain, once the signature says who posts (429); and who may post what, once
// the activity is parsed (Handler.Authorize; 403, or 202 for a Like from a domain we have no
// relationship with). What is stored is then deleted by the data-expiry task once handled and
// older than InboxKeep.

// quotaKeys bounds the actors (and the domains) whose buckets the inbox tracks; beyond it the
// untracked ones share one bucket (ratelimit.Keyed).
const quotaKeys = 10_000

// quota holds the inbox's token buckets, per actor and per domain. They are per instance: a
// cluster of N instances behind one address takes up to N times the rate.
type quota struct {
	actors, domains *ratelimit.Keyed
}

func newQuota(c Config) quota {
	return quota{
		actors:  ratelimit.New(c.InboxActorRate, c.InboxActorBurst, quotaKeys),
		domains: ratelimit.New(c.InboxDomainRate, c.InboxDomainBurst, quotaKeys),
	}
}

// carriesAnchor reports whether activities of type t may carry an anchor's linkset (one item per
// operation of a batch) and so be as large as MaxInboxBytes.
func carriesAnchor(t activity.Type) bool {
	return t == activity.TypeCreate || t == activity.TypeAnnounce || t == activity.TypeOffer
}

// maxBytes is the body cap of activity type t; a type not yet known (empty) gets the largest.
func (s *Service) maxBytes(t activity.Type) int64 {
	if t == "" || carriesAnchor(t) || !t.IsActivity() {
		return s.cfg.MaxInboxBytes
	}
	return s.cfg.MaxSmallInboxBytes
}

// readInbox reads the body of an inbox POST before anything else is looked at, and answers 413
// for one over the cap: over MaxInboxBytes by its Content-Length or as read, or over its type's
// cap, the type read from the body's top-level "type" member without parsing the rest (peekType).
// The body is put back for the signature check. It has answered when it returns false.
func (s *Service) readInbox(w http.ResponseWriter, r *http.Request) ([]byte, activity.Type, bool) {
	limit := s.cfg.MaxInboxBytes
	if r.ContentLength > limit {
		s.tooLarge(w, r, "", limit)
		return nil, "", false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), err == nil && int64(len(body)) > limit:
		s.tooLarge(w, r, "", limit)
		return nil, "", false
	case err != nil:
		s.refuse(w, r, "", http.StatusBadRequest, "invalid_activity", "the body could not be read", err)
		return nil, "", false
	}
	t, _ := peekType(body)
	typ := activity.Type(t)
	if n := s.maxBytes(typ); int64(len(body)) > n {
		s.tooLarge(w, r, typ, n)
		return nil, "", false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, typ, true
}

// tooLarge answers 413 for a body over limit. The type is named only when it is one we know: a
// client's made-up type is not repeated back.
func (s *Service) tooLarge(w http.ResponseWriter, r *http.Request, t activity.Type, limit int64) {
	msg := "an activity is limited to " + strconv.FormatInt(limit, 10) + " bytes"
	if t.IsActivity() {
		msg = "a " + string(t) + " activity is limited to " + strconv.FormatInt(limit, 10) + " bytes"
	}
	s.m.inbox.WithLabelValues(typeLabel(t), "too_large").Inc()
	s.cfg.Logger.DebugContext(r.Context(), "inbox request refused", "status", http.StatusRequestEntityTooLarge,
		"client", r.RemoteAddr, "type_cap", limit)
	httpapi.WriteError(w, http.StatusRequestEntityTooLarge, "request_too_large", msg)
}

// allowInbox takes one token from the signer's bucket and one from its domain's, and answers
// 429 with Retry-After when either is empty. It has answered when it returns false.
func (s *Service) allowInbox(w http.ResponseWriter, r *http.Request, t activity.Type, signer string) bool {
	ok, wait := s.quota.actors.Allow(signer)
	who := "actor"
	if ok {
		ok, wait = s.quota.domains.Allow(domainOf(signer))
		who = "domain"
	}
	if ok {
		return true
	}
	s.m.inbox.WithLabelValues(typeLabel(t), "rate_limited").Inc()
	w.Header().Set("Retry-After", strconv.FormatInt(int64(max(time.Second, wait+time.Second-1)/time.Second), 10))
	httpapi.WriteError(w, http.StatusTooManyRequests, "rate_limited",
		"too many activities from this "+who+"; retry after the time Retry-After gives")
	return false
}

// domainOf is the domain of an actor IRI: its scheme, host and port, lower-cased as URLs compare.
func domainOf(actor string) string {
	u, err := url.Parse(actor)
	if err != nil || u.Host == "" {
		return actor
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// typeLabel is the metrics label of an activity type: a type we know, or unknown (a client may
// write anything there, and labels must come from a fixed set).
func typeLabel(t activity.Type) string {
	if t.IsActivity() {
		return string(t)
	}
	return "unknown"
}

// peekType returns the value of a JSON object's top-level "type" member, as encoding/json would
// decode it into a field tagged "type" (member names matched without regard to case, the last
// one winning), without decoding anything else: nested values are skipped byte by byte. It
// reports false when body is not an object it can walk, has no such member, or one of them is
// not a string. It is a hint for the size cap; the parsed activity is the truth.
func peekType(body []byte) (string, bool) {
	p := peeker{b: body}
	p.space()
	if !p.eat('{') {
		return "", false
	}
	var typ string
	found := false
	p.space()
	if p.eat('}') {
		return "", false
	}
	for {
		p.space()
		key, ok := p.str()
		if !ok {
			return "", false
		}
		p.space()
		if !p.eat(':') {
			return "", false
		}
		p.space()
		if strings.EqualFold(key, "type") {
			v, ok := p.str()
			if !ok {
				return "", false
			}
			typ, found = v, true
		} else if !p.skip() {
			return "", false
		}
		p.space()
		switch {
		case p.eat(','):
		case p.eat('}'):
			return typ, found
		default:
			return "", false
		}
	}
}

// peeker walks a JSON text; every method advances past what it read and reports false, leaving
// the position anywhere, when the text is not what it expects.
type peeker struct {
	b []byte
	i int
}

func (p *peeker) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *peeker) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// rawString passes a string and returns it with its quotes, escapes undecoded.
func (p *peeker) rawString() ([]byte, bool) {
	start := p.i
	if !p.eat('"') {
		return nil, false
	}
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '\\':
			p.i += 2
		case c == '"':
			p.i++
			return p.b[start:p.i], true
		case c < 0x20:
			return nil, false
		default:
			p.i++
		}
	}
	return nil, false
}

// str reads a string and decodes it as encoding/json does (escapes, invalid UTF-8).
func (p *peeker) str() (string, bool) {
	raw, ok := p.rawString()
	if !ok {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && isASCII(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// skip passes one value of any kind. Objects and arrays are passed by counting brackets outside
// strings; their contents are checked no further than that (the parser does it).
func (p *peeker) skip() bool {
	if p.i >= len(p.b) {
		return false
	}
	switch p.b[p.i] {
	case '"':
		_, ok := p.rawString()
		return ok
	case '{', '[':
		depth := 0
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case '"':
				if _, ok := p.rawString(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			p.i++
			if depth == 0 {
				return true
			}
		}
		return false
	default:
		start := p.i
		for p.i < len(p.b) && !strings.ContainsRune(",}] \t\r\n", rune(p.b[p.i])) {
			p.i++
		}
		return p.i > start
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
