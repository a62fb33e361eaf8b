package sidetree

import "sync"

// OperationCache remembers anchored operations parsed under one profile, so that resolving a DID
// again after one more of its operations was indexed parses only that one: under a mixed load a
// DID's history is resolved afresh after each of its changes, and parsing the requests it had
// already parsed was about a sixth of the server's CPU.
//
// An entry is keyed by the request's bytes themselves (the map compares them in full), and
// parsing depends only on those bytes and the profile, so a hit is exactly what a parse would
// give. Only operations that parsed are kept; a request that does not parse is parsed (and
// refused) again each time, which only a malformed batch costs.
//
// It is safe for concurrent use. The Operations it holds are shared between resolutions, which
// only read them, except for the verified flag: set once a signature verified, and as true for
// every resolution that would verify it again.
type OperationCache struct {
	p   Profile
	max int

	mu    sync.Mutex
	m     map[string]*Operation
	bytes int
}

// OperationCacheBytesDefault bounds the memory an OperationCache holds: about 13,000 operations
// of a create with one key and one service.
const OperationCacheBytesDefault = 32 << 20

// entryCost is what an entry is charged per byte of its request: the key (a copy of the request)
// and the parsed operation, whose stored request, compact and canonical delta, canonical
// suffix data or key, strings and patches came to 6.7 times the request's length on the heap
// for a create with one key and one service.
const entryCost = 7

// NewOperationCache returns an empty cache for operations parsed under p, holding about maxBytes
// of memory at most (OperationCacheBytesDefault when not positive).
func NewOperationCache(p Profile, maxBytes int) *OperationCache {
	if maxBytes <= 0 {
		maxBytes = OperationCacheBytesDefault
	}
	return &OperationCache{p: p, max: maxBytes, m: make(map[string]*Operation)}
}

// Resolve is Resolve with c's profile, parsing through c.
//
// A history of one operation is parsed without the cache, and not kept: the cache is for
// histories that grow, and a DID that was only created has nothing to parse again until its next
// operation (its state is what the resolver keeps). With a million such DIDs resolved at random,
// admitting each create turned the cache over for a hit rate near 1 %, at the cost of a copy of
// each request and 32 MiB more heap for the collector to scan: one cluster instance resolved
// 7,922 → 7,004 GET/s. A DID's create is admitted with its second operation, when the history
// has started to grow.
func (c *OperationCache) Resolve(suffix string, ops []AnchoredOperation) *State {
	if len(ops) == 1 {
		return Resolve(c.p, suffix, ops)
	}
	return resolve(c.p, suffix, ops, c.parse)
}

func (c *OperationCache) parse(request []byte) (*Operation, *Error) {
	c.mu.Lock()
	op, ok := c.m[string(request)]
	c.mu.Unlock()
	if ok {
		return op, nil
	}
	op, err := parseOperation(request, c.p, modeAnchored)
	if err != nil {
		return nil, err
	}
	c.add(string(request), op)
	return op, nil
}

func (c *OperationCache) add(request string, op *Operation) {
	cost := entryCost * len(request)
	if cost > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[request]; ok {
		return
	}
	for k := range c.m { // evict arbitrary entries: bounded memory, no bookkeeping
		if c.bytes+cost <= c.max {
			break
		}
		delete(c.m, k)
		c.bytes -= entryCost * len(k)
	}
	c.m[request] = op
	c.bytes += cost
}
