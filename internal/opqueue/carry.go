package opqueue

import (
	"bytes"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
)

// Bounds of a carry: an operation's parse is kept from its publish until its message comes back
// to this instance's consumer, normally milliseconds later. One taken by another instance is
// never claimed here; generations of at most carryKeep or carryMax entries let it go. A parsed
// create holds about 2 KiB besides its request, so two full generations stay in the tens of MiB.
const (
	carryKeep = 2 * time.Second
	carryMax  = 1 << 13
)

// carry keeps the operations intake parsed and validated between their publish and their
// delivery to this instance's consumer, so that the batch writer does not parse them again: in
// a cluster the operation goes through the broker as bytes, and usually comes back to the
// instance that accepted it. It is memory only and best effort: an operation that finds no
// parse here (taken by another instance, delivered after a restart or later than two
// generations) is parsed by the batch writer as before.
type carry struct {
	now func() time.Time

	mu        sync.Mutex
	cur, prev map[string]*sidetree.Operation
	started   time.Time // of cur
}

func newCarry(now func() time.Time) *carry {
	return &carry{now: now, cur: make(map[string]*sidetree.Operation), started: now()}
}

// put keeps op's parse under its operation id.
func (c *carry) put(opID string, op *sidetree.Operation) {
	if op == nil {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cur) >= carryMax || now.Sub(c.started) >= carryKeep {
		c.prev, c.cur, c.started = c.cur, make(map[string]*sidetree.Operation), now
	}
	c.cur[opID] = op
}

// take returns and forgets the parse kept for opID, if it is the parse of exactly request: a
// parse is only ever used for the bytes it was made from.
func (c *carry) take(opID string, request []byte) *sidetree.Operation {
	c.mu.Lock()
	op, ok := c.cur[opID]
	if ok {
		delete(c.cur, opID)
	} else if op, ok = c.prev[opID]; ok {
		delete(c.prev, opID)
	}
	c.mu.Unlock()
	if !ok || !bytes.Equal(op.Request, request) {
		return nil
	}
	return op
}

// drop forgets the parse kept for opID (its publish failed).
func (c *carry) drop(opID string) {
	c.mu.Lock()
	delete(c.cur, opID)
	delete(c.prev, opID)
	c.mu.Unlock()
}
