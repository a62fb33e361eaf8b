package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
)

// cachedActor is an actor document as fetched at fetchedAt.
type cachedActor struct {
	actor     *activity.Actor
	fetchedAt time.Time
}

// Actor returns the actor document of iri, cached (see the package doc). The document's id must
// be iri exactly.
func (c *Client) Actor(ctx context.Context, iri string) (*activity.Actor, error) {
	a, err := c.actor(ctx, iri, false)
	if err != nil {
		return nil, fmt.Errorf("resolve actor %s: %w", iri, err)
	}
	return a, nil
}

// Forget drops iri from the memory cache, so that the next Actor fetches it (or reads the
// store's copy).
func (c *Client) Forget(iri string) { c.cache.Remove(iri) }

func (c *Client) actor(ctx context.Context, iri string, refresh bool) (*activity.Actor, error) {
	if err := activity.ValidateActorIRI(iri); err != nil {
		return nil, err
	}
	now := c.cfg.NowFunc()
	var stale *cachedActor
	if e, ok := c.cache.Get(iri); ok {
		if !refresh && c.fresh(e, now) {
			c.m.cache.WithLabelValues("memory").Inc()
			return e.actor, nil
		}
		stale = &e
	}
	if stale == nil && !refresh {
		if e, ok := c.stored(ctx, iri); ok {
			if c.fresh(e, now) {
				c.remember(iri, e)
				c.m.cache.WithLabelValues("store").Inc()
				return e.actor, nil
			}
			stale = &e
		}
	}
	a, doc, err := c.fetchActor(ctx, iri)
	if err != nil {
		if stale != nil && !IsNotFound(err) && now.Sub(stale.fetchedAt) < c.cfg.CacheTTL+c.cfg.MaxStale {
			c.cfg.Logger.WarnContext(ctx, "using a stale actor document", "actor", iri,
				"fetched_at", stale.fetchedAt, "error", err)
			c.m.cache.WithLabelValues("stale").Inc()
			return stale.actor, nil
		}
		return nil, err
	}
	e := cachedActor{actor: a, fetchedAt: now}
	c.remember(iri, e)
	c.m.cache.WithLabelValues("fetched").Inc()
	row := store.CachedActor{IRI: iri, Inbox: a.Inbox, Outbox: a.Outbox, Document: doc, FetchedAt: now}
	if a.PublicKey != nil {
		row.KeyID, row.KeyPEM = a.PublicKey.ID, a.PublicKey.PublicKeyPem
	}
	if err := c.st.ActorCacheUpsert(ctx, row); err != nil {
		// The memory cache has it; the next start fetches it again.
		c.cfg.Logger.WarnContext(ctx, "store actor document", "actor", iri, "error", err)
	}
	return a, nil
}

func (c *Client) fresh(e cachedActor, now time.Time) bool {
	return now.Sub(e.fetchedAt) < c.cfg.CacheTTL
}

// stored reads the store's copy of an actor; a copy that no longer parses is ignored.
func (c *Client) stored(ctx context.Context, iri string) (cachedActor, bool) {
	row, err := c.st.ActorCacheGet(ctx, iri)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			c.cfg.Logger.WarnContext(ctx, "read cached actor", "actor", iri, "error", err)
		}
		return cachedActor{}, false
	}
	a, err := activity.ParseActor(row.Document)
	if err != nil || a.ID != iri {
		return cachedActor{}, false
	}
	return cachedActor{actor: a, fetchedAt: row.FetchedAt}, true
}

func (c *Client) fetchActor(ctx context.Context, iri string) (*activity.Actor, []byte, error) {
	doc, err := c.Fetch(ctx, iri, c.cfg.MaxDocumentBytes)
	if err != nil {
		return nil, nil, err
	}
	a, err := activity.ParseActor(doc)
	if err != nil {
		return nil, nil, err
	}
	if a.ID != iri {
		return nil, nil, fmt.Errorf("actor document at %s has id %q", iri, a.ID)
	}
	return a, doc, nil
}

// keyDocument is what a key id dereferences to.
type keyDocument struct {
	ID           string `json:"id"`
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

// keyFailure is a key resolution that failed, and when.
type keyFailure struct {
	err error
	at  time.Time
}

// ResolveKey implements httpsig.KeyResolverFunc: the key named by keyID and its owner, whose
// actor document must name keyID as its key. Answers that settle that the key is not (or no
// longer) the owner's wrap httpsig.ErrKeyNotFound; failures to find out do not. Everything is
// fetched from the keyID's host and port: an owner elsewhere is refused unfetched. A failed
// resolution is remembered for KeyFailureTTL and answered again without a fetch, and requests
// that need one key at once share its resolution.
func (c *Client) ResolveKey(ctx context.Context, keyID string) (httpsig.PublicKey, error) {
	now := c.cfg.NowFunc()
	if f, ok := c.failures.Get(keyID); ok && now.Sub(f.at) < c.cfg.KeyFailureTTL {
		c.m.keys.WithLabelValues("failure_remembered").Inc()
		return httpsig.PublicKey{}, fmt.Errorf("resolve key %s: failed %s ago, not fetched again yet: %w", keyID, now.Sub(f.at), f.err)
	}
	v, err, _ := c.resolving.Do(keyID, func() (any, error) {
		key, err := c.resolveKey(ctx, keyID)
		switch {
		case err == nil:
			c.failures.Remove(keyID)
			c.m.keys.WithLabelValues("resolved").Inc()
		case ctx.Err() == nil:
			// The peer's failure, not our caller's giving up: remembered.
			c.failures.Add(keyID, keyFailure{err: err, at: c.cfg.NowFunc()})
			c.m.keys.WithLabelValues("failed").Inc()
		}
		return key, err
	})
	if err != nil {
		return httpsig.PublicKey{}, fmt.Errorf("resolve key %s: %w", keyID, err)
	}
	return v.(httpsig.PublicKey), nil
}

func (c *Client) resolveKey(ctx context.Context, keyID string) (httpsig.PublicKey, error) {
	if strings.HasPrefix(keyID, "did:") {
		return httpsig.PublicKey{}, fmt.Errorf("%w: key ids that are DIDs are not resolved", httpsig.ErrKeyNotFound)
	}
	if err := activity.ValidateActorIRI(keyID); err != nil {
		return httpsig.PublicKey{}, fmt.Errorf("%w: %w", httpsig.ErrKeyNotFound, err)
	}
	if !httpsig.SameHost(keyID, keyID) {
		return httpsig.PublicKey{}, fmt.Errorf("%w: key ids are http(s) URLs", httpsig.ErrKeyNotFound)
	}
	var doc *keyDocument
	owner, ok := c.keyOwner(keyID)
	if !ok {
		d, err := c.fetchKey(ctx, keyID)
		if err != nil {
			return httpsig.PublicKey{}, err
		}
		doc, owner = d, d.Owner
	}
	if !httpsig.SameHost(owner, keyID) {
		// Resolving the owner would fetch from a host the request did not come from.
		return httpsig.PublicKey{}, fmt.Errorf("%w: owner %q is not on the key's host", httpsig.ErrKeyNotFound, owner)
	}
	a, err := c.actor(ctx, owner, false)
	if err == nil && (a.PublicKey == nil || a.PublicKey.ID != keyID) {
		// The cached document may predate a key rotation.
		a, err = c.actor(ctx, owner, true)
	}
	if err != nil {
		if IsNotFound(err) {
			return httpsig.PublicKey{}, fmt.Errorf("%w: owner %s: %w", httpsig.ErrKeyNotFound, owner, err)
		}
		return httpsig.PublicKey{}, err
	}
	if a.PublicKey == nil || a.PublicKey.ID != keyID {
		return httpsig.PublicKey{}, fmt.Errorf("%w: actor %s does not name this key", httpsig.ErrKeyNotFound, owner)
	}
	pemText := a.PublicKey.PublicKeyPem
	if pemText == "" || doc != nil {
		if doc == nil {
			if doc, err = c.fetchKey(ctx, keyID); err != nil {
				return httpsig.PublicKey{}, err
			}
		}
		if doc.Owner != owner {
			return httpsig.PublicKey{}, fmt.Errorf("%w: key document names owner %q, not %q", httpsig.ErrKeyNotFound, doc.Owner, owner)
		}
		if pemText != "" && strings.TrimSpace(pemText) != strings.TrimSpace(doc.PublicKeyPem) {
			return httpsig.PublicKey{}, fmt.Errorf("%w: key document and actor %s disagree on the key", httpsig.ErrKeyNotFound, owner)
		}
		pemText = doc.PublicKeyPem
	}
	pub, err := httpsig.DecodePublicKeyPEM(pemText)
	if err != nil {
		return httpsig.PublicKey{}, fmt.Errorf("%w: %w", httpsig.ErrKeyNotFound, err)
	}
	return httpsig.PublicKey{Key: pub, Owner: owner}, nil
}

// keyOwner finds the owner of a key among the actors cached in memory. The store is not asked:
// a request signed with a key id we do not know would cost a database query before anything
// about it is verified; after a restart, a peer's key document is fetched once more instead.
func (c *Client) keyOwner(keyID string) (string, bool) {
	return c.keys.Get(keyID)
}

// remember caches an actor in memory, with its key id when the key is on the actor's host.
func (c *Client) remember(iri string, e cachedActor) {
	c.cache.Add(iri, e)
	if e.actor.PublicKey != nil && httpsig.SameHost(e.actor.PublicKey.ID, iri) {
		c.keys.Add(e.actor.PublicKey.ID, iri)
	}
}

func (c *Client) fetchKey(ctx context.Context, keyID string) (*keyDocument, error) {
	body, err := c.Fetch(ctx, keyID, c.cfg.MaxDocumentBytes)
	if err != nil {
		if IsNotFound(err) {
			return nil, fmt.Errorf("%w: %w", httpsig.ErrKeyNotFound, err)
		}
		return nil, err
	}
	var d keyDocument
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("%w: key document: %w", httpsig.ErrKeyNotFound, err)
	}
	if d.ID != keyID {
		return nil, fmt.Errorf("%w: key document at %s has id %q", httpsig.ErrKeyNotFound, keyID, d.ID)
	}
	if err := activity.ValidateActorIRI(d.Owner); err != nil {
		return nil, fmt.Errorf("%w: key owner: %w", httpsig.ErrKeyNotFound, err)
	}
	return &d, nil
}
