package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

func TestMemoryLimitIsTheBudgetLessSQLitesPageCaches(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	pages := sqlitestore.PageCacheBound(sqlitestore.Config{ReaderCacheSize: cfg.SQLiteCacheSize})
	require.Equal(t, int64(360<<20+cfg.StateCacheSize*2<<10)-pages, MemoryLimit(cfg),
		"embedded, the default budget is a base and 2 KiB per cached state, and SQLite's page caches are taken from it")
	cfg.StateCacheSize = 1_000_000
	require.Equal(t, int64(360<<20+1_000_000*2<<10)-pages, MemoryLimit(cfg), "a larger cache raises the budget with it")
	cfg.SQLiteCacheSize *= 2
	require.Less(t, MemoryLimit(cfg), int64(360<<20+1_000_000*2<<10)-pages, "larger page caches leave the runtime less")
	cfg.MemoryLimit = 1 << 30
	require.Equal(t, int64(1<<30)-sqlitestore.PageCacheBound(sqlitestore.Config{ReaderCacheSize: cfg.SQLiteCacheSize}), MemoryLimit(cfg),
		"an operator's budget stands, less the page caches")
	cfg.DatabaseURL = "postgres://db/anchord"
	require.Equal(t, int64(1<<30), MemoryLimit(cfg), "a cluster instance has no page caches of its own")
	cfg.MemoryLimit = 32 << 20
	require.Equal(t, int64(64<<20), MemoryLimit(cfg), "a budget below the floor gives the runtime the floor")
	cfg.MemoryLimit = -1
	require.Zero(t, MemoryLimit(cfg), "a negative budget sets none")
}
