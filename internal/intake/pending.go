package intake

import (
	"context"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/store"
)

// Pending is the set of DIDs with an operation in flight that this instance accepted (embedded:
// one process accepts, queues and indexes every operation).
//
// A reservation names the operation holding the DID. It ends when the observer has committed
// the operation's index rows (ReleaseIndexed), when the operation is parked (Release, from the
// queue) or not accepted after all (Drop), or once it is older than the TTL; the TTL is a safety
// net, not the normal path. Only the holder's own end ends it: a late release of an operation
// that no longer holds the DID (its reservation lapsed and another took it) leaves the new
// holder alone.
type Pending struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]reservation
}

type reservation struct {
	opID string
	at   time.Time
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

// Reserve takes suffix for operation opID. It reports false while a reservation younger than the
// TTL holds the DID, even one of the same operation: a request sent twice is queued once.
func (p *Pending) Reserve(suffix, opID string) bool {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, taken := p.m[suffix]; taken && now.Sub(r.at) < p.ttl {
		return false
	}
	p.m[suffix] = reservation{opID: opID, at: now}
	return true
}

// ReserveAll reserves the DIDs of operations already queued (at start, before intake opens).
func (p *Pending) ReserveAll(keys []store.DIDPendingKey) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		p.m[k.Suffix] = reservation{opID: k.OpID, at: now}
	}
}

// Release ends the listed reservations; a DID held by another operation than the one named is
// left alone.
func (p *Pending) Release(keys []store.DIDPendingKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if r, ok := p.m[k.Suffix]; ok && r.opID == k.OpID {
			delete(p.m, k.Suffix)
		}
	}
}

// ReleaseIndexed ends the reservations of operations whose index rows were committed (the
// observer's ReleaseFunc). It must be called only after the commit: a request that finds the
// DID free then reads a state that holds the operation.
func (p *Pending) ReleaseIndexed(ops []store.DIDOperation) {
	keys := make([]store.DIDPendingKey, len(ops))
	for i, op := range ops {
		keys[i] = store.DIDPendingKey{Suffix: op.Suffix, OpID: opqueue.OpIDOf(op.Request)}
	}
	p.Release(keys)
}

// Hold implements Reservations: a reservation in this process's memory.
func (p *Pending) Hold(_ context.Context, suffix string, _ bool, opID string) (bool, error) {
	return p.Reserve(suffix, opID), nil
}

// Drop implements Reservations.
func (p *Pending) Drop(_ context.Context, suffix, opID string) {
	p.Release([]store.DIDPendingKey{{Suffix: suffix, OpID: opID}})
}

// Len returns the number of reservations (live or lapsed).
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
