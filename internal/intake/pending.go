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
//
// Between the observer's commit and ReleaseIndexed a resolution already shows the operation
// while its reservation still holds the DID; a client that posts its next operation the moment
// it sees the last one would be refused. So the observer marks the reservations it is indexing
// (Committing), and a Hold that meets one waits for the commit's outcome instead of refusing.
type Pending struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]reservation
}

type reservation struct {
	opID string
	at   time.Time
	// committing, while non-nil, is closed once the index transaction holding this operation
	// has committed (the reservation is then gone) or failed.
	committing chan struct{}
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
	ok, _ := p.reserve(suffix, opID)
	return ok
}

// reserve is Reserve that, when the DID's holder is being indexed, also returns the channel that
// is closed once that is decided.
func (p *Pending) reserve(suffix, opID string) (bool, <-chan struct{}) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, taken := p.m[suffix]; taken && now.Sub(r.at) < p.ttl {
		return false, r.committing
	}
	p.m[suffix] = reservation{opID: opID, at: now}
	return true, nil
}

// Committing marks the reservations of ops as being indexed, before the observer writes their
// first index rows. The returned func ends the mark; the observer calls it once the transaction
// is decided, after ReleaseIndexed when it committed.
func (p *Pending) Committing(ops []store.DIDOperation) (done func()) {
	// Hashed before the lock is taken: an anchor holds up to thousands of operations, and every
	// accepted request's Reserve waits for the lock.
	ids := make([]string, len(ops))
	for i, op := range ops {
		ids[i] = opqueue.OpIDOf(op.Request)
	}
	ch := make(chan struct{})
	var marked []string
	p.mu.Lock()
	for i, op := range ops {
		if r, ok := p.m[op.Suffix]; ok && r.committing == nil && r.opID == ids[i] {
			r.committing = ch
			p.m[op.Suffix] = r
			marked = append(marked, op.Suffix)
		}
	}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		for _, suffix := range marked {
			if r, ok := p.m[suffix]; ok && r.committing == ch {
				r.committing = nil
				p.m[suffix] = r
			}
		}
		p.mu.Unlock()
		close(ch)
	}
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

// Hold implements Reservations: a reservation in this process's memory. A DID whose holder is
// being indexed is waited for (the commit takes milliseconds); ctx bounds the wait.
func (p *Pending) Hold(ctx context.Context, suffix string, _ bool, opID string) (bool, error) {
	for {
		ok, committing := p.reserve(suffix, opID)
		if ok || committing == nil {
			return ok, nil
		}
		select {
		case <-committing:
		case <-ctx.Done():
			return false, nil
		}
	}
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
