package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/config"
)

func TestMemoryLimitFollowsTheStateCache(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	require.Equal(t, int64(320<<20+cfg.StateCacheSize*2<<10), MemoryLimit(cfg), "the default: a base and 2 KiB per cached state")
	cfg.StateCacheSize = 1_000_000
	require.Equal(t, int64(320<<20+1_000_000*2<<10), MemoryLimit(cfg), "a larger cache raises the limit with it")
	cfg.MemoryLimit = 1 << 30
	require.Equal(t, int64(1<<30), MemoryLimit(cfg), "an operator's limit stands")
	cfg.MemoryLimit = -1
	require.Zero(t, MemoryLimit(cfg), "a negative limit sets none")
}
