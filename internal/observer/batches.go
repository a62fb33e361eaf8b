package observer

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
)

// BatchCacheBytesDefault bounds the requests Batches keeps: about four anchors of 10,000
// creates with one key and one service each (~8 MB of requests and their bookkeeping), or the
// anchors of many small ones.
const BatchCacheBytesDefault = 32 << 20

// ErrRequestUnavailable: an index row's request could not be rebuilt from its anchor's batch
// files (they are not in CAS, or hold no such operation there).
var ErrRequestUnavailable = errors.New("request not rebuilt from the batch files")

// BatchesConfig configures Batches.
type BatchesConfig struct {
	Profile sidetree.Profile
	// Limits are the batch reader's limits for this domain's anchors (the Observer's), and
	// ForeignLimits those other domains' anchors were read with when they were applied (the
	// relay's). A batch is read again with the limits it was indexed under, so that it gives
	// the operations it gave then: a check that passed a file then refused might refuse it now.
	Limits        batchfile.Limits
	ForeignLimits batchfile.Limits
	// CacheBytes bounds the requests kept in memory (BatchCacheBytesDefault when not positive).
	CacheBytes int
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Batches rebuilds the requests of index rows from their anchors' batch files. The index keeps
// where each operation was anchored (anchor, position, DID, type) but not the operation itself
// (store.DIDOperation.Request): every anchor's batch files are in CAS, since this domain's
// anchors store them in the transaction that records the anchor and another domain's are stored
// in the transaction that applies it, and the batch reader rebuilds each request from them byte
// for byte.
//
// Only the paths that need a DID's history read batches: a version, the explorer's history,
// the did:orb lists of operations, a state computed again from history, the start-time fill. A
// resolution reads the DID's compact state and nothing else. An anchor's batch is read,
// decompressed and parsed once, and its requests kept in a cache bounded by their bytes, most
// recently used first; concurrent reads of one anchor wait for the first.
type Batches struct {
	cfg   BatchesConfig
	fetch FetchFunc
	m     *batchMetrics

	mu      sync.Mutex
	lru     *list.List              // of *batchEntry, most recently used first
	entries map[int64]*list.Element // by anchor seq
	bytes   int
	reading map[int64]*batchRead
}

type batchEntry struct {
	seq  int64
	ops  []sidetree.AnchoredOperation // by Position
	cost int
}

// batchRead is a read under way; done is closed once ops or err is set.
type batchRead struct {
	done chan struct{}
	ops  []sidetree.AnchoredOperation
	err  error
}

// NewBatches returns Batches reading CAS through fetch (cas.Store.FetchFunc).
func NewBatches(cfg BatchesConfig, fetch FetchFunc) (*Batches, error) {
	if cfg.CacheBytes <= 0 {
		cfg.CacheBytes = BatchCacheBytesDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	m, err := newBatchMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Batches{
		cfg: cfg, fetch: fetch, m: m,
		lru: list.New(), entries: map[int64]*list.Element{}, reading: map[int64]*batchRead{},
	}, nil
}

// Requests sets the Request of each row that has none, from its anchor's batch (rows indexed
// while the index kept requests have theirs). The requests set are shared with the cache and
// later callers: they must not be modified. A request that cannot be rebuilt is an error
// wrapping ErrRequestUnavailable, never a row left without one: a history resolved without an
// operation would be a different history.
func (b *Batches) Requests(ctx context.Context, rows []store.DIDOperation) error {
	if b == nil {
		for _, r := range rows {
			if r.Request == nil {
				return fmt.Errorf("operation %d.%d of %s: no batch reader: %w", r.AnchorSeq, r.Index, r.Suffix, ErrRequestUnavailable)
			}
		}
		return nil
	}
	for i := range rows {
		r := &rows[i]
		if r.Request != nil {
			continue
		}
		ops, err := b.operations(ctx, r.AnchorSeq, r.AnchorString, r.Origin)
		if err != nil {
			return fmt.Errorf("operation %d.%d of %s: %w", r.AnchorSeq, r.Index, r.Suffix, err)
		}
		j := sort.Search(len(ops), func(j int) bool { return ops[j].Position >= r.Index })
		if j == len(ops) || ops[j].Position != r.Index || ops[j].Suffix != r.Suffix || string(ops[j].Type) != r.Type {
			b.m.mismatches.Inc()
			return fmt.Errorf("operation %d.%d of %s: the batch holds no %s of it there: %w", r.AnchorSeq, r.Index, r.Suffix, r.Type, ErrRequestUnavailable)
		}
		r.Request = ops[j].Request
	}
	return nil
}

// operations returns the operations of anchor seq, from the cache or its batch files.
func (b *Batches) operations(ctx context.Context, seq int64, anchorString, origin string) ([]sidetree.AnchoredOperation, error) {
	b.mu.Lock()
	if e, ok := b.entries[seq]; ok {
		b.lru.MoveToFront(e)
		ops := e.Value.(*batchEntry).ops
		b.mu.Unlock()
		b.m.hits.Inc()
		return ops, nil
	}
	if rd, ok := b.reading[seq]; ok {
		b.mu.Unlock()
		select {
		case <-rd.done:
			return rd.ops, rd.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rd := &batchRead{done: make(chan struct{})}
	b.reading[seq] = rd
	b.mu.Unlock()

	rd.ops, rd.err = b.read(ctx, seq, anchorString, origin)
	b.mu.Lock()
	delete(b.reading, seq)
	if rd.err == nil {
		b.keep(seq, rd.ops)
	}
	b.mu.Unlock()
	close(rd.done)
	return rd.ops, rd.err
}

// read reads anchor seq's batch as the observer read it when it indexed the anchor: a batch
// whose provisional files were invalid gives its core operations without deltas, as it did
// then. A batch that cannot be read at all now was readable then, so its files are missing or
// damaged.
func (b *Batches) read(ctx context.Context, seq int64, anchorString, origin string) ([]sidetree.AnchoredOperation, error) {
	if b.fetch == nil {
		return nil, fmt.Errorf("read anchor %d: no CAS: %w", seq, ErrRequestUnavailable)
	}
	if anchorString == "" {
		return nil, fmt.Errorf("read anchor %d: no anchor string: %w", seq, ErrRequestUnavailable)
	}
	limits := b.cfg.Limits
	if origin != "" {
		limits = b.cfg.ForeignLimits
	}
	b.m.reads.Inc()
	batch, err := batchfile.Read(b.cfg.Profile, anchorString, b.fetch(ctx), limits)
	if err == nil && batch.ProvisionalErr != nil {
		var fe *batchfile.FetchError
		if errors.As(batch.ProvisionalErr, &fe) {
			err = batch.ProvisionalErr
		}
	}
	if err != nil {
		b.m.failures.Inc()
		b.cfg.Logger.ErrorContext(ctx, "batch files of an indexed anchor do not read; its operations' requests are unavailable", "seq", seq, "anchor", anchorString, "error", err)
		return nil, fmt.Errorf("read anchor %d: %w: %w", seq, ErrRequestUnavailable, err)
	}
	ops := batch.Operations
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Position < ops[j].Position })
	return ops, nil
}

// batchOpCost is what an operation is charged beyond its request's bytes: its struct and its
// suffix.
const batchOpCost = 160

// keep caches ops, evicting the least recently used batches beyond the bound; the caller holds
// mu. A batch larger than the whole bound is not kept.
func (b *Batches) keep(seq int64, ops []sidetree.AnchoredOperation) {
	cost := 0
	for _, op := range ops {
		cost += len(op.Request) + batchOpCost
	}
	if cost > b.cfg.CacheBytes {
		return
	}
	for b.bytes+cost > b.cfg.CacheBytes {
		last := b.lru.Back()
		e := last.Value.(*batchEntry)
		b.lru.Remove(last)
		delete(b.entries, e.seq)
		b.bytes -= e.cost
	}
	b.entries[seq] = b.lru.PushFront(&batchEntry{seq: seq, ops: ops, cost: cost})
	b.bytes += cost
	b.m.cached.Set(float64(b.bytes))
}

type batchMetrics struct {
	reads, hits, failures, mismatches prometheus.Counter
	cached                            prometheus.Gauge
}

func newBatchMetrics(reg prometheus.Registerer) (*batchMetrics, error) {
	m := &batchMetrics{
		reads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_batch_reads_total", Help: "Anchored batches read from CAS to rebuild index rows' requests (history, versions, explorer).",
		}),
		hits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_batch_cache_hits_total", Help: "Anchored batches whose requests were found in memory instead of read from CAS.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_batch_read_failures_total", Help: "Anchored batches whose files could not be read back from CAS.",
		}),
		mismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_observer_batch_mismatches_total", Help: "Index rows whose anchored batch holds no such operation at their position.",
		}),
		cached: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_observer_batch_cache_bytes", Help: "Bytes of requests the batch cache holds.",
		}),
	}
	for _, c := range []prometheus.Collector{m.reads, m.hits, m.failures, m.mismatches, m.cached} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register batch metrics: %w", err)
		}
	}
	return m, nil
}
