package daemon

import (
	"math"

	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// The default budget is what the process keeps beyond the resolver's state cache, plus 2 KiB per
// cached state: the parsed-operation and batch caches (32 MiB each), the filter of known DIDs (~3
// bytes per DID, ~30 MiB at ten million), intake's queue, the HTTP servers' buffers, the
// runtime's own, and an embedded store's page caches (90 MiB by default). Measured while loading
// ten million DIDs with a full state cache of 100,000 entries: ~290 MiB of live Go heap at three
// million, ~330 MiB at nine; the default leaves the collector ~140 MiB of headroom above that.
// The entries were ~2.1 KiB then; they have been ~1.3 KiB since they hold byte slices instead
// of states (observer.BenchmarkStateCacheGC), and the difference is left to the headroom.
const (
	memoryLimitBase          = 360 << 20
	memoryLimitPerStateEntry = 2 << 10
	// The least the runtime is given when an operator's budget hardly covers the page caches:
	// the collector then works hard, and the budget is overrun rather than the process stalled.
	memoryLimitGoFloor = 64 << 20
)

// MemoryLimit is the soft memory limit the serve command gives the Go runtime, in bytes; 0
// means none. Without one the heap grows to twice what is live before each collection, so a
// full state cache's garbage alone doubled the resident memory (RssAnon 780 MiB at three million
// DIDs against a live heap of 290 MiB). With it the collector runs more often once the heap
// nears the limit; a live heap above it (an operator's larger cache) makes the collector work
// harder, not the process fail, and the runtime caps that work at about half the CPU.
//
// --memory-limit is the budget of the whole process's anonymous memory. The runtime's limit
// covers only what Go allocates; an embedded store's page caches are allocated by SQLite outside
// it, with a bound of their own (sqlitestore.PageCacheBound), so the runtime gets the budget
// minus that bound.
func MemoryLimit(cfg config.Config) int64 {
	budget := cfg.MemoryLimit
	switch {
	case budget < 0:
		return 0
	case budget == 0:
		entries := int64(max(cfg.StateCacheSize, 0))
		if entries > (math.MaxInt64-memoryLimitBase)/memoryLimitPerStateEntry {
			return 0
		}
		budget = memoryLimitBase + entries*memoryLimitPerStateEntry
	}
	if cfg.DatabaseURL == "" {
		budget -= sqlitestore.PageCacheBound(sqlitestore.Config{ReaderCacheSize: cfg.SQLiteCacheSize})
	}
	return max(budget, memoryLimitGoFloor)
}
