package intake

import (
	"context"
	"sync"
	"time"
)

// Pending is the set of DIDs with an operation in flight that this instance accepted.
//
// A reservation records the version of the DID's anchored history it was taken against. The
// reservation ends when the operation's anchor is observed here (Release), or — as seen by a
// later request — once the DID's history has a new version (the operation, or another, was
// anchored and indexed, possibly by another instance of a cluster), or once it is older than the
// TTL (the operation was parked elsewhere). The TTL is a safety net, not the normal path.
type Pending struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]reservation
}

type reservation struct {
	version uint64
	at      time.Time
}

// PendingTTLDefault bounds how long a reservation can block a DID.
const PendingTTLDefault = 10 * time.Minute

// NewPending returns an empty set whose reservations lapse after ttl (0: PendingTTLDefault).
func NewPending(ttl time.Duration) *Pending {
	if ttl <= 0 {
		ttl = PendingTTLDefault
	}
	return &Pending{ttl: ttl, now: time.Now, m: make(map[string]reservation)}
}

// Reserve takes suffix for an operation checked against history version. It reports false
// when a live reservation exists: one taken against the same version and younger than the TTL.
func (p *Pending) Reserve(suffix string, version uint64) bool {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, taken := p.m[suffix]; taken && (r.version == version || r.version == unknownVersion) && now.Sub(r.at) < p.ttl {
		return false
	}
	p.m[suffix] = reservation{version: version, at: now}
	return true
}

// ReserveAll reserves suffixes against no particular version (at start, for operations already
// queued): they stay reserved until released or the TTL passes.
func (p *Pending) ReserveAll(suffixes []string) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range suffixes {
		p.m[s] = reservation{version: unknownVersion, at: now}
	}
}

// unknownVersion matches no real history version except by a 2^-64 accident.
const unknownVersion = ^uint64(0)

// Release ends the reservations of suffixes.
func (p *Pending) Release(suffixes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range suffixes {
		delete(p.m, s)
	}
}

// Hold implements Reservations: a reservation in this process's memory.
func (p *Pending) Hold(_ context.Context, suffix string, _ bool, version uint64, _ string) (bool, error) {
	return p.Reserve(suffix, version), nil
}

// Drop implements Reservations.
func (p *Pending) Drop(_ context.Context, suffix, _ string) { p.Release([]string{suffix}) }

// Len returns the number of reservations (live or not yet noticed to have ended).
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
