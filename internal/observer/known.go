package observer

import (
	"context"
	"fmt"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"

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
type Known struct {
	mu      sync.RWMutex
	filters []*bloom.BloomFilter
	caps    []uint
	count   uint
}

// NewKnown returns an empty filter.
func NewKnown() *Known { return &Known{} }

// LoadKnown fills a filter with every suffix in the per-DID index.
func LoadKnown(ctx context.Context, st store.Executor) (*Known, error) {
	k := NewKnown()
	after := ""
	for {
		page, err := st.DIDSuffixList(ctx, after, 10_000)
		if err != nil {
			return nil, fmt.Errorf("load known DIDs: %w", err)
		}
		if len(page) == 0 {
			return k, nil
		}
		k.Add(page)
		after = page[len(page)-1]
	}
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

// Len returns how many suffixes were added: LoadKnown adds one per indexed DID, then the Observer
// one per operation it indexes (again if a transaction is retried). It estimates the rows of the
// per-DID index, low after a restart where DIDs have several operations, and is used only as such.
func (k *Known) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	n := k.count
	for _, c := range k.caps[:max(len(k.caps)-1, 0)] {
		n += c
	}
	return int(n)
}

// MayContain reports false when suffix has certainly never been added.
func (k *Known) MayContain(suffix string) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, f := range k.filters {
		if f.TestString(suffix) {
			return true
		}
	}
	return false
}
