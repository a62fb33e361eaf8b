package relay

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/vc"
)

// FetchFunc GETs a URL of another domain, reading at most maxBytes (a longer body is an
// error). It is the signed client's Fetch.
type FetchFunc func(ctx context.Context, url string, maxBytes int64) ([]byte, error)

// errUnreachable marks a failure that is not the peer's data's fault (a host that does not
// answer, a timeout): the activity is retried.
var errUnreachable = errors.New("peer unreachable")

// keyResolver resolves the keys of anchor credential proofs from the did:web documents of
// their authors, with a bounded, expiring cache.
type keyResolver struct {
	fetch FetchFunc
	ttl   time.Duration
	size  int

	mu   sync.Mutex
	docs map[string]cachedDocument
}

type cachedDocument struct {
	doc     *vc.DIDDocument
	fetched time.Time
}

func newKeyResolver(fetch FetchFunc, ttl time.Duration, size int) *keyResolver {
	return &keyResolver{fetch: fetch, ttl: ttl, size: size, docs: map[string]cachedDocument{}}
}

// forAuthor returns the key resolver of proofs by author: a verification method must be a key
// of a did:web on the author's own host, whose document is read from that host with the
// author IRI's scheme. Anything else could be anyone's key.
func (k *keyResolver) forAuthor(author string) (vc.ResolveKeyFunc, error) {
	a, err := url.Parse(author)
	if err != nil || (a.Scheme != "https" && a.Scheme != "http") || a.Host == "" {
		return nil, invalidf("author %q is not an http(s) IRI", author)
	}
	return func(ctx context.Context, vm string) (ed25519.PublicKey, error) {
		did, _, _ := strings.Cut(vm, "#")
		host, path, err := vc.ParseDIDWeb(did)
		if err != nil {
			return nil, invalidf("verification method %q: %v", vm, err)
		}
		if !strings.EqualFold(host, a.Host) {
			return nil, invalidf("verification method %q is not on the author's host %s", vm, a.Host)
		}
		docURL := a.Scheme + "://" + host + path
		doc, cached, err := k.document(ctx, did, docURL, false)
		if err != nil {
			return nil, err
		}
		pub, err := doc.AssertionKey(vm)
		if err != nil && cached {
			// A key the cached document lacks may be a new one: read the document again.
			if doc, _, err = k.document(ctx, did, docURL, true); err != nil {
				return nil, err
			}
			pub, err = doc.AssertionKey(vm)
		}
		if err != nil {
			return nil, invalidf("%v", err)
		}
		return pub, nil
	}, nil
}

// document returns the DID document of did, from the cache unless refresh, and whether it came
// from the cache.
func (k *keyResolver) document(ctx context.Context, did, docURL string, refresh bool) (*vc.DIDDocument, bool, error) {
	now := time.Now()
	k.mu.Lock()
	c, ok := k.docs[did]
	k.mu.Unlock()
	if ok && !refresh && now.Sub(c.fetched) < k.ttl {
		return c.doc, true, nil
	}
	body, err := k.fetch(ctx, docURL, vc.MaxDocumentSize)
	if err != nil {
		return nil, false, fmt.Errorf("%w: DID document %s: %w", errUnreachable, docURL, err)
	}
	doc, err := vc.ParseDIDDocument(body)
	if err != nil {
		return nil, false, invalidf("DID document %s: %v", docURL, err)
	}
	if doc.ID != did {
		return nil, false, invalidf("DID document %s is of %s, want %s", docURL, doc.ID, did)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.docs) >= k.size {
		for key := range k.docs { // evict an arbitrary entry: bounded memory, no bookkeeping
			delete(k.docs, key)
			break
		}
	}
	k.docs[did] = cachedDocument{doc: doc, fetched: now}
	return doc, false, nil
}

// checkCredential verifies the anchor credential a link carries in replies: its subject names
// the link (href the anchor, anchor the original's core index) and at least one of its proofs
// is by the author and verifies.
func (k *keyResolver) checkCredential(ctx context.Context, raw []byte, anchor, coreIndex, author string) (issued int64, err error) {
	c, err := vc.ParseCredential(raw)
	if err != nil {
		return 0, invalidf("anchor credential: %v", err)
	}
	subject, err := c.AnchorSubject()
	if err != nil {
		return 0, invalidf("anchor credential: %v", err)
	}
	if subject.HRef != anchor || subject.Anchor != coreIndex {
		return 0, invalidf("anchor credential is for %s (core index %s), not %s (%s)", subject.HRef, subject.Anchor, anchor, coreIndex)
	}
	resolve, err := k.forAuthor(author)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, p := range c.Proofs() {
		err := vc.VerifyProof(ctx, c, p, resolve)
		if err == nil {
			return issuedSecond(c), nil
		}
		if errors.Is(err, errUnreachable) {
			return 0, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return 0, invalidf("anchor credential has no proof")
	}
	return 0, invalidf("no proof of the anchor credential verifies with a key of %s: %v", author, errors.Join(errs...))
}

// issuedSecond is the whole second (Unix time) of the credential's issuanceDate, Orb's
// transaction time of the anchor's operations; 0 when it has none, or one not after 1970, which
// resolution then treats as not known.
func issuedSecond(c *vc.Credential) int64 {
	if t := c.IssuanceDate(); t.Unix() > 0 {
		return t.Unix()
	}
	return 0
}

// AuthorKeys returns the key resolver of proofs by an author (the rules of forAuthor: keys of
// a did:web on the author's own host), with its own bounded, expiring cache of documents; the
// witness proof handler verifies witnesses' proofs with it. Errors wrapping ErrInvalid are the
// author's fault.
func AuthorKeys(fetch FetchFunc) func(author string) (vc.ResolveKeyFunc, error) {
	k := newKeyResolver(fetch, KeyCacheTTLDefault, KeyCacheSizeDefault)
	return k.forAuthor
}
