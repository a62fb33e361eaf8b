package peer

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/httpsig"
)

func TestActorIsCachedInMemoryAndStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := newDomain(t)
	ctx := context.Background()

	a, err := b.client.Actor(ctx, d.actor)
	require.NoError(t, err)
	require.Equal(t, d.actor+"/inbox", a.Inbox)
	_, err = b.client.Actor(ctx, d.actor)
	require.NoError(t, err)
	require.Equal(t, int64(1), d.actorHits.Load(), "the second lookup is answered from memory")

	row, err := b.st.ActorCacheGet(ctx, d.actor)
	require.NoError(t, err)
	require.Equal(t, d.keyID(), row.KeyID)
	require.Equal(t, d.actor+"/outbox", row.Outbox)

	b.client.Forget(d.actor)
	_, err = b.client.Actor(ctx, d.actor)
	require.NoError(t, err)
	require.Equal(t, int64(1), d.actorHits.Load(), "a forgotten actor is read back from the store while fresh")

	b.clock.Advance(CacheTTLDefault + time.Second)
	_, err = b.client.Actor(ctx, d.actor)
	require.NoError(t, err)
	require.Equal(t, int64(2), d.actorHits.Load(), "an expired entry is fetched again")
}

func TestActorStaleOnlyWhileThePeerFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := newDomain(t)
	ctx := context.Background()
	_, err := b.client.Actor(ctx, d.actor)
	require.NoError(t, err)

	d.set(func(d *domain) { d.actorStatus = http.StatusBadGateway })
	b.clock.Advance(CacheTTLDefault + time.Minute)
	a, err := b.client.Actor(ctx, d.actor)
	require.NoError(t, err, "a failing peer's stale document is used")
	require.Equal(t, d.actor, a.ID)

	b.clock.Advance(MaxStaleDefault)
	_, err = b.client.Actor(ctx, d.actor)
	require.Error(t, err, "but not for ever")

	d.set(func(d *domain) { d.actorStatus = http.StatusNotFound })
	b.client.Forget(d.actor)
	_, err = b.client.Actor(ctx, d.actor)
	require.True(t, IsNotFound(err), "an actor the peer says is gone is not served stale")
}

func TestActorDocumentMustNameItself(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := newDomain(t)
	d.set(func(d *domain) {
		d.handler = func(w http.ResponseWriter, r *http.Request) {
			// /other serves the actor document of /services/anchord.
			r.URL.Path = "/services/anchord"
			d.serve(w, r)
		}
	})
	_, err := b.client.Actor(context.Background(), d.srv.URL+"/other")
	require.ErrorContains(t, err, "has id")
	_, err = b.client.Actor(context.Background(), "ftp://x.example/a")
	require.Error(t, err)
}

func TestResolveKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OrbWay", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d := newDomain(t)
		k, err := b.client.ResolveKey(ctx, d.keyID())
		require.NoError(t, err)
		require.Equal(t, d.actor, k.Owner)
		require.Equal(t, d.key.Public().(ed25519.PublicKey), k.Key)
		_, err = b.client.ResolveKey(ctx, d.keyID())
		require.NoError(t, err)
		require.Equal(t, int64(1), d.keyHits.Load(), "the owner of a cached actor's key needs no key fetch")
		require.Equal(t, int64(1), d.actorHits.Load())
	})

	t.Run("ActorNamesAnotherKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d := newDomain(t)
		d.set(func(d *domain) { d.actorKeyID = d.actor + "/keys/other" })
		_, err := b.client.ResolveKey(ctx, d.keyID())
		require.ErrorIs(t, err, httpsig.ErrKeyNotFound)
	})

	t.Run("KeyClaimsAnotherOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		victim := newDomain(t)
		evil := newDomain(t)
		evil.set(func(d *domain) {
			d.handler = func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/keys/k" {
					_, _ = w.Write([]byte(`{"id":"` + d.srv.URL + `/keys/k","owner":"` + victim.actor + `","publicKeyPem":` + quote(d.pem(t)) + `}`))
					return
				}
				http.NotFound(w, r)
			}
		})
		_, err := b.client.ResolveKey(ctx, evil.srv.URL+"/keys/k")
		require.ErrorIs(t, err, httpsig.ErrKeyNotFound, "the key's owner is on another host")
		require.Zero(t, victim.actorHits.Load(), "the owner on another host is not fetched")
	})

	t.Run("CachedActorNamingAKeyElsewhere", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d, other := newDomain(t), newDomain(t)
		// d's actor document names a key on another domain's host: caching d must not make
		// that key d's.
		d.set(func(d *domain) { d.actorKeyID = other.keyID() })
		_, err := b.client.Actor(ctx, d.actor)
		require.NoError(t, err)
		k, err := b.client.ResolveKey(ctx, other.keyID())
		require.NoError(t, err)
		require.Equal(t, other.actor, k.Owner, "the key's own document decides, on its own host")
	})

	t.Run("FailureIsRememberedForTheTTL", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d := newDomain(t)
		d.set(func(d *domain) { d.actorStatus = http.StatusBadGateway })
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				_, err := b.client.ResolveKey(ctx, d.keyID())
				require.Error(t, err)
			})
		}
		wg.Wait()
		require.Equal(t, int64(1), d.keyHits.Load(), "20 requests at once, one fetch")
		require.Equal(t, int64(1), d.actorHits.Load())
		d.set(func(d *domain) { d.actorStatus = 0 })
		b.clock.Advance(KeyFailureTTLDefault - time.Second)
		_, err := b.client.ResolveKey(ctx, d.keyID())
		require.Error(t, err, "still remembered")
		require.Equal(t, int64(1), d.keyHits.Load())
		b.clock.Advance(2 * time.Second)
		k, err := b.client.ResolveKey(ctx, d.keyID())
		require.NoError(t, err, "fetched again after the TTL")
		require.Equal(t, d.actor, k.Owner)
		require.Equal(t, int64(2), d.keyHits.Load())
	})

	t.Run("RefusedByTheGuard", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d := newDomain(t)
		closed, err := egress.New(egress.Config{})
		require.NoError(t, err)
		c, err := New(Config{KeyID: b.keyID, PrivateKey: b.ourKey, HTTP: closed.Client()}, b.st)
		require.NoError(t, err)
		_, err = c.ResolveKey(ctx, d.keyID())
		require.ErrorIs(t, err, egress.ErrRefused)
		require.NotErrorIs(t, err, httpsig.ErrKeyNotFound)
		require.Zero(t, d.keyHits.Load())
	})

	t.Run("UnknownAndUnreachable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d := newDomain(t)
		_, err := b.client.ResolveKey(ctx, d.srv.URL+"/no/such/key")
		require.ErrorIs(t, err, httpsig.ErrKeyNotFound)
		_, err = b.client.ResolveKey(ctx, "did:web:example.com#key-1")
		require.ErrorIs(t, err, httpsig.ErrKeyNotFound)
		d.srv.Close()
		_, err = b.client.ResolveKey(ctx, d.keyID())
		require.Error(t, err)
		require.NotErrorIs(t, err, httpsig.ErrKeyNotFound, "a peer we cannot reach has not said the key is unknown")
	})

	t.Run("RotatedKeyIsPickedUpBeforeTheTTL", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		d := newDomain(t)
		d.set(func(d *domain) { d.actorKeyID = d.actor + "/keys/old" })
		_, err := b.client.Actor(ctx, d.actor)
		require.NoError(t, err)
		d.set(func(d *domain) { d.actorKeyID = "" })
		k, err := b.client.ResolveKey(ctx, d.keyID())
		require.NoError(t, err)
		require.Equal(t, d.actor, k.Owner)
		require.Equal(t, int64(2), d.actorHits.Load(), "the cached document named the old key, so it was fetched again")
	})
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r == '\n' {
			b = append(b, '\\', 'n')
			continue
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '"'))
}
