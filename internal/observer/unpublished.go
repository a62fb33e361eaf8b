package observer

import (
	"bytes"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// UnpublishedMaxDefault bounds the operations an Unpublished keeps: the operation queue's
// default backlog. Operations that have left the queue and are being anchored are kept too, so
// under load the store can fill while intake still accepts; it then keeps nothing more until
// an operation is indexed or lapses. The requests are the queue's own bytes, not copies.
const UnpublishedMaxDefault = 100_000

// Unpublished is Orb's unpublished operation store (--enable-unpublished-operation-store) for the
// did:orb profile: the creates and updates (Orb's default types) this instance accepted and has
// not indexed yet. The resolver applies them after a DID's anchored operations, so a DID shows
// an accepted update at once (its metadata says when it was accepted, and names no version for
// it), and lists them in the metadata for the domains that resolve the DID from this one, its
// anchor origin.
//
// An operation leaves when its index rows are committed here (Indexed), when it is parked
// (Release), or after the TTL. The resolver also skips an operation it finds among the DID's
// index rows, so a late or missed release costs memory until the TTL, never a wrong answer. It
// is per instance: in a cluster, an instance lists the operations it accepted itself.
type Unpublished struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu sync.Mutex
	m  map[string][]unpublishedOp // by suffix
	n  int
	// lapse is the earliest time an operation kept can lapse: a full store sweeps only once
	// one may have, not at every Add (a sweep reads every operation, and under load the store
	// fills with operations that are anchoring, not lapsing).
	lapse time.Time
}

type unpublishedOp struct {
	opID    string
	typ     sidetree.OperationType
	request []byte
	origin  string
	at      time.Time
}

// NewUnpublished returns an empty store whose operations lapse after ttl (must be positive) and
// which keeps at most maxOps (UnpublishedMaxDefault when not positive).
func NewUnpublished(ttl time.Duration, maxOps int) *Unpublished {
	if maxOps <= 0 {
		maxOps = UnpublishedMaxDefault
	}
	return &Unpublished{ttl: ttl, max: maxOps, now: time.Now, m: map[string][]unpublishedOp{}}
}

// Add keeps an operation intake accepted; opID is its queue id. Recovers and deactivates are not
// kept (Orb's default types are create and update), nor anything once the store is full.
// origin is the DID's anchor origin, which Orb lists with an update.
func (u *Unpublished) Add(op *sidetree.Operation, opID, origin string) {
	if op.Type != sidetree.OperationCreate && op.Type != sidetree.OperationUpdate {
		return
	}
	if op.Type == sidetree.OperationCreate {
		origin = op.AnchorOrigin
	}
	now := u.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n >= u.max {
		if now.Before(u.lapse) {
			return
		}
		u.sweep(now)
		if u.n >= u.max {
			return
		}
	}
	u.m[op.Suffix] = append(u.m[op.Suffix], unpublishedOp{opID: opID, typ: op.Type, request: op.Request, origin: origin, at: now})
	u.n++
}

// Indexed forgets the operations whose index rows were committed (the observer's release).
func (u *Unpublished) Indexed(rows []store.DIDOperation) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, row := range rows {
		u.remove(row.Suffix, func(o unpublishedOp) bool { return bytes.Equal(o.request, row.Request) })
	}
}

// Release forgets parked or dropped operations (the queue's release).
func (u *Unpublished) Release(keys []store.DIDPendingKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, k := range keys {
		u.remove(k.Suffix, func(o unpublishedOp) bool { return o.opID == k.OpID })
	}
}

// Len returns how many operations are kept (lapsed ones included until swept).
func (u *Unpublished) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

// of returns the live operations of suffix, oldest first, without those among rows (already
// indexed), which it forgets.
func (u *Unpublished) of(suffix string, rows []store.DIDOperation) []unpublishedOp {
	now := u.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.remove(suffix, func(o unpublishedOp) bool {
		if now.Sub(o.at) >= u.ttl {
			return true
		}
		for _, row := range rows {
			if bytes.Equal(row.Request, o.request) {
				return true
			}
		}
		return false
	})
	return append([]unpublishedOp(nil), u.m[suffix]...)
}

// has reports whether suffix has operations kept (live or not); it is the resolver's cheap test.
func (u *Unpublished) has(suffix string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m[suffix]) > 0
}

func (u *Unpublished) remove(suffix string, drop func(unpublishedOp) bool) {
	ops, ok := u.m[suffix]
	if !ok {
		return
	}
	kept := ops[:0]
	for _, o := range ops {
		if !drop(o) {
			kept = append(kept, o)
		}
	}
	u.n -= len(ops) - len(kept)
	if len(kept) == 0 {
		delete(u.m, suffix)
		return
	}
	u.m[suffix] = kept
}

// sweep forgets every lapsed operation and notes when the oldest left lapses (an operation
// added later lapses later); the caller holds mu.
func (u *Unpublished) sweep(now time.Time) {
	oldest := now
	for suffix := range u.m {
		u.remove(suffix, func(o unpublishedOp) bool {
			if now.Sub(o.at) >= u.ttl {
				return true
			}
			if o.at.Before(oldest) {
				oldest = o.at
			}
			return false
		})
	}
	u.lapse = oldest.Add(u.ttl)
}
