package observer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// StateCacheSizeDefault bounds the resolver's state cache (entries, one per DID, about 1.3 KiB
// each with its rendering for a DID with one key and one service: BenchmarkStateCacheGC).
const StateCacheSizeDefault = 100_000

// Resolver resolves DIDs from the per-DID index.
//
// The Observer keeps each DID's state beside its operations, computed when they are indexed
// (did_states, sidetree.StateRecord), so resolving a DID reads one row and decodes it. The
// Resolver caches the states it read, each with a fingerprint of where the DID's operations
// were anchored and, once a short-form resolution rendered it, its rendering; the row is read
// on every call, and the rendering of a cached state whose fingerprint still matches is served
// as it is.
//
// When this process's Observer is the only writer of the index (embedded mode), it tells the
// Resolver of every write (see Config.Resolver), and a cached state is used without reading the
// row at all: its rendering served, or the state decoded from the bytes kept (~3 µs, which a
// state kept as objects saved, at the price of the collector marking every cached state's
// objects at every cycle). Under a mixed load that read was most of the server's CPU: with
// commits every few milliseconds, SQLite drops each reader connection's page cache at the start
// of nearly every read, so each lookup walks the B-tree afresh.
type Resolver struct {
	profile sidetree.Profile
	st      store.Executor
	// ops keeps parsed operations between resolutions of past versions: a DID resolved again
	// after a change parses only its new operations.
	ops *sidetree.OperationCache

	known    *Known // nil: always read the database
	presence *presence
	// states reads the states of concurrent resolutions together when the index is shared with
	// other instances (no Known): every call reads them, and a round trip each was most of it.
	states *group[[]byte]

	// miss is called for a did:orb name of a DID not held here (SetMissFunc); nil: nothing.
	miss atomic.Pointer[func(did string)]
	// orbOps is what did:orb resolutions do beyond the index rows (SetOrbOperations); nil:
	// nothing.
	orbOps atomic.Pointer[OrbOperations]
	// batches rebuilds the requests of index rows, which the index does not keep, for the paths
	// that read a DID's history (SetBatches; the Observer sets its own when none is set).
	batches atomic.Pointer[Batches]

	mu        sync.Mutex
	cache     map[string]cachedState
	max       int
	exclusive bool   // every index write is announced through Invalidate
	epoch     uint64 // advanced by every Invalidate
}

// cachedState is a cached DID state in a form the collector need not look into: its binary form
// (sidetree.StateRecord's AppendBinary), which a hit decodes, followed in the same slice by its
// short-form resolution result once a Resolve rendered it, which a hit serves as it is. A full
// cache of states as objects was ~1.1 million of them for the collector to mark at every cycle
// (about 11 per state); this is the key and the slice.
type cachedState struct {
	fingerprint uint64
	data        []byte
	// record is the length of the binary form at the start of data: 0 where the cache is not
	// trusted, whose every call reads the row and decodes the state from it anyway. A rendering,
	// if any, is the rest.
	record int32
	status sidetree.ResolutionStatus
}

// rendering is the kept short-form resolution result; nil when none is.
func (c *cachedState) rendering() []byte {
	if len(c.data) == int(c.record) {
		return nil
	}
	return c.data[c.record:]
}

// NewResolver returns a Resolver. known, when not nil, lets it answer "not anchored" for a DID
// the filter has never seen without reading the database (embedded mode only: see Known).
// stateCacheSize bounds the states it keeps (StateCacheSizeDefault when not positive).
func NewResolver(p sidetree.Profile, st store.Executor, known *Known, stateCacheSize int) *Resolver {
	if stateCacheSize <= 0 {
		stateCacheSize = StateCacheSizeDefault
	}
	return &Resolver{
		profile: p, st: st, ops: sidetree.NewOperationCache(p, sidetree.OperationCacheBytesDefault), known: known, presence: newPresence(st), states: newStateGroup(st),
		cache: make(map[string]cachedState), max: stateCacheSize,
	}
}

// State returns the current state of the DID with the given suffix, or nil when no create of
// it is anchored. The returned state is shared: callers must not modify it.
func (r *Resolver) State(ctx context.Context, suffix string) (*sidetree.State, error) {
	st, _, err := r.StateVersion(ctx, suffix)
	return st, err
}

// StateVersion is State plus a version of the DID's anchored history: it changes whenever an
// operation of the DID is indexed (0 when there is none).
func (r *Resolver) StateVersion(ctx context.Context, suffix string) (*sidetree.State, uint64, error) {
	st, fp, _, _, err := r.lookup(ctx, suffix, false)
	return st, fp, err
}

// lookup is StateVersion, and when rendered is set and the cache keeps the short-form rendering
// of the state it would return, that rendering and its status instead of the state (nil then):
// a short-form resolution served from the cache decodes nothing.
func (r *Resolver) lookup(ctx context.Context, suffix string, rendered bool) (*sidetree.State, uint64, []byte, sidetree.ResolutionStatus, error) {
	if r.known != nil && !r.known.MayContain(suffix) {
		return nil, 0, nil, 0, nil
	}
	r.mu.Lock()
	c, ok := r.cache[suffix]
	exclusive, epoch := r.exclusive, r.epoch
	r.mu.Unlock()
	if ok && exclusive {
		if body := c.rendering(); rendered && body != nil {
			return nil, c.fingerprint, body, c.status, nil
		}
		if c.record > 0 {
			// The bytes decoded when they were cached; should they not now, the row is read.
			if rec, err := sidetree.DecodeStateRecord(suffix, c.data[:c.record]); err == nil {
				return rec.State, c.fingerprint, nil, 0, nil
			}
		}
	}
	rec, stored, err := r.record(ctx, suffix)
	if err != nil {
		return nil, 0, nil, 0, fmt.Errorf("resolve %s: %w", suffix, err)
	}
	if rec == nil {
		return nil, 0, nil, 0, nil
	}
	fp := fingerprint(rec.Positions)
	if ok && c.fingerprint == fp && (c.record > 0 || !exclusive) {
		if body := c.rendering(); rendered && body != nil {
			return nil, fp, body, c.status, nil
		}
		return rec.State, fp, nil, 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exclusive && r.epoch != epoch {
		// An index write began since the rows were read: they may be stale, and a stale entry
		// would be trusted. The next call reads again.
		return rec.State, fp, nil, 0, nil
	}
	if len(r.cache) >= r.max {
		for k := range r.cache { // evict an arbitrary entry: bounded memory, no bookkeeping
			delete(r.cache, k)
			break
		}
	}
	entry := cachedState{fingerprint: fp}
	if r.exclusive {
		if stored != nil {
			// Kept as they are, not copied: no one changes them (the store's answer is this
			// call's, or shared by the calls one query answered, which only read it).
			entry.data = stored
		} else {
			entry.data = rec.AppendBinary(nil)
		}
		entry.record = int32(len(entry.data))
	}
	// A key of its own: suffix may be part of a longer string (a long-form DID, a request's
	// path), which the key would otherwise keep.
	r.cache[strings.Clone(suffix)] = entry
	return rec.State, fp, nil, 0, nil
}

// record reads the stored state of suffix (nil when the DID has no indexed operation) with the
// bytes it decoded from: on its own where this process alone writes the index (a read is a
// function call there), with the concurrent resolutions' where it is shared. A state that does
// not decode is computed from the DID's operations instead, and its bytes are nil (the observer
// logs and replaces it at the DID's next operation).
func (r *Resolver) record(ctx context.Context, suffix string) (*sidetree.StateRecord, []byte, error) {
	var b []byte
	if r.known != nil {
		var err error
		if b, err = r.st.DIDStateGet(ctx, suffix); errors.Is(err, store.ErrNotFound) {
			return nil, nil, nil
		} else if err != nil {
			return nil, nil, err
		}
	} else {
		var found bool
		var err error
		if b, found, err = r.states.get(ctx, suffix); err != nil || !found {
			return nil, nil, err
		}
	}
	rec, err := sidetree.DecodeStateRecord(suffix, b)
	if err == nil {
		return rec, b, nil
	}
	rows, err := r.history(ctx, suffix)
	if err != nil {
		return nil, nil, err
	}
	return sidetree.ResolveRecord(r.profile, suffix, anchoredOps(rows)), nil, nil
}

// SetBatches sets what rebuilds the requests of index rows from their batch files. Set it
// before the server takes requests.
func (r *Resolver) SetBatches(b *Batches) { r.batches.Store(b) }

// history reads the index rows of suffix with their requests: the paths that resolve from a
// DID's operations (versions, a state that does not decode) read them from the batch files.
func (r *Resolver) history(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	rows, err := r.st.DIDOperationList(ctx, suffix)
	if err != nil {
		return nil, err
	}
	if err := r.batches.Load().Requests(ctx, rows); err != nil {
		return nil, err
	}
	return rows, nil
}

// CreateStateVersion is StateVersion for checking a create, and answers the same. A create is
// nearly always of a DID the index has never seen, and for those the answer is (nil, 0): without
// the filter of known DIDs (a cluster, where other instances index too), the concurrent creates'
// questions "does the index hold this suffix at all?" are put to the database together, one
// query per round, and only a suffix it holds is read in full.
func (r *Resolver) CreateStateVersion(ctx context.Context, suffix string) (*sidetree.State, uint64, error) {
	if r.known == nil {
		found, err := r.presence.has(ctx, suffix)
		if err != nil {
			return nil, 0, fmt.Errorf("resolve %s: %w", suffix, err)
		}
		if !found {
			return nil, 0, nil
		}
	}
	return r.StateVersion(ctx, suffix)
}

// CreateState is CreateStateVersion without the version.
func (r *Resolver) CreateState(ctx context.Context, suffix string) (*sidetree.State, error) {
	st, _, err := r.CreateStateVersion(ctx, suffix)
	return st, err
}

// Invalidate forgets the cached states of suffixes. The Observer calls it both before and after
// each index write commits: the first call stops readers from trusting the old state while the
// commit is under way, the second removes whatever a reader cached from rows read before the
// commit (the epoch refuses most of those anyway).
func (r *Resolver) Invalidate(suffixes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.epoch++
	for _, s := range suffixes {
		delete(r.cache, s)
	}
}

// trustCache makes cached states authoritative; the Observer calls it when it is the only writer
// of the index and announces every write.
func (r *Resolver) trustCache() {
	r.mu.Lock()
	r.exclusive = true
	r.mu.Unlock()
}

// fingerprint identifies a DID's set of index rows by where each was anchored (anchor
// sequence, position), which is the row's key; rows are never changed once written.
func fingerprint(positions []sidetree.Position) uint64 {
	h := fnv.New64a()
	var b [12]byte
	for _, p := range positions {
		binary.LittleEndian.PutUint64(b[:8], p.Sequence)
		binary.LittleEndian.PutUint32(b[8:], uint32(p.Index))
		_, _ = h.Write(b[:])
	}
	return h.Sum64()
}

// Resolve renders the resolution result of a DID in short or long form. A malformed DID is a
// *sidetree.Error. The body may be shared with later calls: callers must not modify it.
func (r *Resolver) Resolve(ctx context.Context, did string) ([]byte, sidetree.ResolutionStatus, error) {
	d, err := sidetree.ParseDID(r.profile, did)
	if err != nil {
		return nil, 0, err
	}
	if d.IsOrb() && r.orbLatest(d.Suffix) {
		return r.resolveLatest(ctx, d, nil, nil, nil, nil)
	}
	// A short form renders from the suffix and the state alone (the method is the profile's),
	// so its rendering is kept in the cache beside the state and served from there.
	short := !d.IsOrb() && !d.IsLongForm()
	st, fp, body, status, err := r.lookup(ctx, d.Suffix, short)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		return body, status, nil
	}
	if d.IsOrb() {
		// The id is the name asked for, so the rendering is not kept.
		return r.resolveOrb(ctx, d, st, r.orbAnchors(), sidetree.Metadata{})
	}
	if !short || st == nil {
		body, status = sidetree.RenderResolution(d, st)
		return body, status, nil
	}
	// The cache keeps a copy of the rendering, which is what the caller gets; the renderer's
	// buffer is used again.
	buf := renderBuffers.Get().(*[]byte)
	rendered, status := sidetree.AppendResolution((*buf)[:0], d, st)
	if body = r.keepRendered(d.Suffix, fp, rendered, status); body == nil {
		body = bytes.Clone(rendered)
	}
	if cap(rendered) <= maxRenderBuffer {
		*buf = rendered[:0]
		renderBuffers.Put(buf)
	}
	return body, status, nil
}

// renderBuffers holds the buffers short-form resolutions render into (*[]byte), so that a miss
// allocates only the rendering the cache keeps. A buffer grown beyond maxRenderBuffer (a DID
// with a large document) is left to the collector.
var renderBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxRenderBuffer = 64 << 10

// keepRendered keeps a copy of the short-form rendering of the state with fingerprint fp, if
// that is still the cached state (an Invalidate since forgot it, or a newer state took its
// place: then the rendering is of no use), and returns the copy; nil when it kept none.
func (r *Resolver) keepRendered(suffix string, fp uint64, body []byte, status sidetree.ResolutionStatus) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cache[suffix]
	if !ok || c.fingerprint != fp || c.rendering() != nil {
		return nil
	}
	// One slice of the exact length: a renderer's buffer has room to spare (1.5 KiB for a
	// 0.9 KiB result), which a cache of 100,000 entries would keep.
	data := make([]byte, 0, len(c.data)+len(body))
	c.data, c.status = append(append(data, c.data...), body...), status
	r.cache[suffix] = c
	return c.data[len(c.data)-len(body):]
}
