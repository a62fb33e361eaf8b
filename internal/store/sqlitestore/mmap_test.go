package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMmapSizeReachesEveryConnection: the memory map's bound is what bounds the file pages in
// the process's resident size, so the writer and every reader must have it.
func TestMmapSizeReachesEveryConnection(t *testing.T) {
	t.Parallel()
	mmapOf := func(db *sql.DB) int64 {
		var n int64
		require.NoError(t, db.QueryRow("PRAGMA mmap_size").Scan(&n))
		return n
	}
	for _, tc := range []struct {
		set, want int64
	}{{0, MmapSizeDefault}, {1 << 20, 1 << 20}, {-1, 0}} {
		s, err := Open(context.Background(), Config{DataDir: t.TempDir(), MmapSize: tc.set})
		require.NoError(t, err)
		require.Equal(t, tc.want, mmapOf(s.writer), "writer, MmapSize %d", tc.set)
		// Hold every reader at once, so that each one's setting is read, not one pooled twice.
		var conns []*sql.Conn
		for range MaxReadersDefault {
			c, err := s.reader.Conn(context.Background())
			require.NoError(t, err)
			conns = append(conns, c)
			var n int64
			require.NoError(t, c.QueryRowContext(context.Background(), "PRAGMA mmap_size").Scan(&n))
			require.Equal(t, tc.want, n, "reader, MmapSize %d", tc.set)
		}
		for _, c := range conns {
			require.NoError(t, c.Close())
		}
		s.Close()
	}
}

// TestPageCachesAreBounded: the page caches are memory outside the Go runtime's limit, so every
// connection's must be the size PageCacheBound counts.
func TestPageCachesAreBounded(t *testing.T) {
	t.Parallel()
	cacheOf := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int64 {
		var kib int64
		require.NoError(t, q.QueryRowContext(context.Background(), "PRAGMA cache_size").Scan(&kib))
		require.Negative(t, kib, "set in KiB, not pages")
		return -kib << 10
	}
	for _, set := range []int64{0, 1 << 20} {
		cfg := Config{DataDir: t.TempDir(), ReaderCacheSize: set, MaxReaders: 3, CheckpointInterval: CheckpointIntervalDefault}
		s, err := Open(context.Background(), cfg)
		require.NoError(t, err)
		want := cmp.Or(set, ReaderCacheSizeDefault)
		sum := cacheOf(s.writer) + cacheOf(s.ckptDB)
		var conns []*sql.Conn
		for range 3 {
			c, err := s.reader.Conn(context.Background())
			require.NoError(t, err)
			conns = append(conns, c)
			require.Equal(t, want, cacheOf(c), "reader, ReaderCacheSize %d", set)
			sum += want
		}
		for _, c := range conns {
			require.NoError(t, c.Close())
		}
		require.Equal(t, PageCacheBound(cfg), sum, "the bound is the sum of every connection's cache")
		s.Close()
	}
}
