package httpsig

import (
	"crypto/ed25519"
	"sync"
	"time"
)

// sigKey is an Ed25519 signature, the replay cache's key.
type sigKey [ed25519.SignatureSize]byte

// replayCache remembers verified signatures for a fixed time after they were first seen, up to
// a fixed number. The lifetime includes its end instant, as the Date check includes the edge
// of the skew. It never forgets an entry early: when full it drops only expired entries and
// otherwise refuses the new signature, because forgetting a live one would let it be replayed.
//
// Entries expire in insertion order (the lifetime is constant), so expired ones are dropped from
// the front of a FIFO as the cache is used, and no goroutine sweeps it. A clock that steps back
// only keeps entries longer.
type replayCache struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	expires map[sigKey]time.Time
	fifo    []replayEntry // insertion order; fifo[head:] are not yet dropped
	head    int
}

// replayEntry carries its expiry so that dropping an old FIFO slot cannot delete a newer entry
// for the same signature (possible only after the clock stepped back).
type replayEntry struct {
	sig     sigKey
	expires time.Time
}

func newReplayCache(ttl time.Duration, maxEntries int) *replayCache {
	return &replayCache{ttl: ttl, max: maxEntries, expires: make(map[sigKey]time.Time)}
}

// seen reports whether sig was added and has not expired. Verify asks before fetching a key so
// that a replay costs no remote fetch; add decides.
func (c *replayCache) seen(sig sigKey, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.expires[sig]
	return ok && !now.After(exp)
}

// add records sig, or returns errReplay if it is already recorded and unexpired, or
// errReplayCacheFull if the cache holds max unexpired entries.
func (c *replayCache) add(sig sigKey, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropExpired(now)
	if exp, ok := c.expires[sig]; ok && !now.After(exp) {
		return errReplay
	}
	if len(c.expires) >= c.max {
		return errReplayCacheFull
	}
	exp := now.Add(c.ttl)
	c.expires[sig] = exp
	c.fifo = append(c.fifo, replayEntry{sig: sig, expires: exp})
	return nil
}

func (c *replayCache) dropExpired(now time.Time) {
	for c.head < len(c.fifo) {
		e := c.fifo[c.head]
		if !now.After(e.expires) {
			break
		}
		if exp, ok := c.expires[e.sig]; ok && exp.Equal(e.expires) {
			delete(c.expires, e.sig)
		}
		c.head++
	}
	// Move the live part down once half of the slice is dead, so that it does not grow while
	// the cache is in steady use; the copy is paid for by the drops that preceded it.
	if c.head > 0 && c.head >= len(c.fifo)/2 {
		n := copy(c.fifo, c.fifo[c.head:])
		c.fifo = c.fifo[:n]
		c.head = 0
	}
}

// len returns the number of signatures held, expired or not.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.expires)
}
