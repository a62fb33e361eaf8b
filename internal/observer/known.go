package observer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
)

// Known-suffix filter parameters: the first filter holds this many suffixes at this false
// positive rate; each later one holds twice as many at half the rate, so the combined rate stays
// below twice the first's however many DIDs there are.
const (
	knownInitialCapacity = 1 << 20
	knownFalsePositive   = 0.005
)

// Known answers "has this DID suffix certainly never been indexed?" without a database read. It
// is a scalable Bloom filter over every suffix in did_operations: a miss is certain, a hit is
// only probable (the caller then reads the database). It is exact only when every indexing of
// did_operations goes through Add before its transaction commits — the embedded mode, where this
// process's observer is the only writer. Intake uses it to skip the state read of a create for a
// new DID, which under load otherwise costs a cold-cache SQLite read per request.
//
// A process that starts on an index it did not build fills the filter in the background (Fill)
// while it already serves: until the fill is done the filter answers "may contain" for every
// suffix, so callers read the database as a cluster instance does. Reading every DID before
// serving took a start-up of ~2 s per million DIDs; a start must not grow with the index.
type Known struct {
	mu      sync.RWMutex
	filters []*bloom.BloomFilter
	caps    []uint
	count   uint
	// filled is set once every suffix indexed before the filter existed was added.
	filled atomic.Bool
}

// NewKnown returns an empty filter that is exact from the start: for an index it sees being
// built from nothing (tests, benchmarks).
func NewKnown() *Known {
	k := &Known{}
	k.filled.Store(true)
	return k
}

// NewUnfilledKnown returns an empty filter that answers "may contain" until Fill has added every
// suffix already indexed.
func NewUnfilledKnown() *Known { return &Known{} }

// LoadKnown fills a filter with every suffix in the per-DID index before it returns.
func LoadKnown(ctx context.Context, st store.Executor) (*Known, error) {
	k := NewUnfilledKnown()
	if err := k.Fill(ctx, st); err != nil {
		return nil, err
	}
	return k, nil
}

// knownFillPage is the suffixes read per query while filling.
const knownFillPage = 10_000

// Fill adds every suffix of the per-DID index, then makes the filter's "never indexed" answers
// count. Suffixes indexed while it runs are added by the Observer (before their commit) whether
// or not the scan passes them, so once the scan ends nothing indexed is missing.
func (k *Known) Fill(ctx context.Context, st store.Executor) error {
	after := ""
	for {
		page, next, err := st.DIDSuffixList(ctx, after, knownFillPage)
		if err != nil {
			return fmt.Errorf("load known DIDs: %w", err)
		}
		if len(page) == 0 {
			k.filled.Store(true)
			return nil
		}
		k.Add(page)
		after = next
	}
}

// Filled reports whether Fill has finished (or the filter never needed one).
func (k *Known) Filled() bool { return k.filled.Load() }

// Collector is the gauge anchord_observer_known_filter_filled: 0 while the filter is being filled
// after a start, then 1. Until then the reads it saves are made, and the scan itself takes CPU, so
// figures taken right after a start are told apart by it.
func (k *Known) Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "anchord_observer_known_filter_filled",
		Help: "1 once the filter of known DIDs holds every DID indexed before the start, 0 while it is being filled (creates and resolutions of unknown DIDs read the index meanwhile).",
	}, func() float64 {
		if k.filled.Load() {
			return 1
		}
		return 0
	})
}

// Add records suffixes as indexed.
func (k *Known) Add(suffixes []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, s := range suffixes {
		last := len(k.filters) - 1
		if last < 0 || k.count >= k.caps[last] {
			capacity, rate := uint(knownInitialCapacity), knownFalsePositive
			if last >= 0 {
				capacity = 2 * k.caps[last]
				rate = knownFalsePositive / float64(uint(1)<<min(len(k.filters), 30))
			}
			k.filters = append(k.filters, bloom.NewWithEstimates(capacity, rate))
			k.caps = append(k.caps, capacity)
			k.count = 0
			last++
		}
		k.filters[last].AddString(s)
		k.count++
	}
}

// Len returns how many suffixes were added: Fill adds one per indexed DID, then the Observer
// one per operation it indexes (again if a transaction is retried). It estimates the rows of the
// per-DID index, low after a restart where DIDs have several operations or while Fill still
// runs, and is used only as such.
func (k *Known) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	n := k.count
	for _, c := range k.caps[:max(len(k.caps)-1, 0)] {
		n += c
	}
	return int(n)
}

// MayContain reports false when suffix has certainly never been indexed; before Fill is done it
// always reports true.
func (k *Known) MayContain(suffix string) bool {
	if !k.filled.Load() {
		return true
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, f := range k.filters {
		if f.TestString(suffix) {
			return true
		}
	}
	return false
}
