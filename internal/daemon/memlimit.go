package daemon

import (
	"math"

	"github.com/anchord/anchord/internal/config"
)

// The memory the process keeps beyond the resolver's state cache: the parsed-operation and
// batch caches (32 MiB each), the filter of known DIDs (~3 bytes per DID, ~30 MiB at ten
// million), intake's queue, the HTTP servers' buffers and the runtime's own. Measured while
// loading ten million DIDs with a full state cache of 100,000 entries: ~290 MiB live at three
// million, ~330 MiB at nine.
const (
	memoryLimitBase          = 320 << 20
	memoryLimitPerStateEntry = 2 << 10
)

// MemoryLimit is the soft memory limit the serve command gives the Go runtime, in bytes; 0
// means none. Without one the heap grows to twice what is live before each collection, so a
// full state cache's garbage alone doubled the resident memory (RssAnon 780 MiB at three million
// DIDs against a live heap of 290 MiB). With it the collector runs more often once the heap
// nears the limit; a live heap above it (an operator's larger cache) makes the collector work
// harder, not the process fail, and the runtime caps that work at about half the CPU.
//
// The limit covers what the Go runtime allocates. An embedded store's page caches are allocated
// by SQLite outside it; they have a bound of their own (sqlitestore.PageCacheBound, 90 MiB by
// default), and the process's anonymous memory is at most about the sum of the two.
func MemoryLimit(cfg config.Config) int64 {
	switch {
	case cfg.MemoryLimit < 0:
		return 0
	case cfg.MemoryLimit > 0:
		return cfg.MemoryLimit
	}
	entries := int64(max(cfg.StateCacheSize, 0))
	if entries > (math.MaxInt64-memoryLimitBase)/memoryLimitPerStateEntry {
		return 0
	}
	return memoryLimitBase + entries*memoryLimitPerStateEntry
}
