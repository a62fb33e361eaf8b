package sqlitestore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
)

// TestInTxSyncsOutsideTheWriteLock: with synchronous=full, transactions commit without syncing
// and share fdatasyncs of the WAL made after the lock is released; every committed write is
// there, the writer connection is back at synchronous=FULL between transactions (its writes
// outside InTx sync at commit as before).
func TestInTxSyncsOutsideTheWriteLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	s, err := Open(ctx, Config{DataDir: t.TempDir(), Registerer: reg})
	require.NoError(t, err)
	defer s.Close()
	require.NotNil(t, s.wal)
	syncs0, waits0 := testutil.ToFloat64(s.wal.syncs), testutil.ToFloat64(s.wal.waits) // the migrations'

	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					return tx.SettingPut(ctx, fmt.Sprintf("w%d-%d", w, i), []byte("v"))
				})
				if err != nil {
					t.Errorf("InTx: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	for w := range writers {
		for i := range each {
			v, err := s.SettingGet(ctx, fmt.Sprintf("w%d-%d", w, i))
			require.NoError(t, err)
			require.Equal(t, []byte("v"), v)
		}
	}
	var mode int
	require.NoError(t, s.writer.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode))
	require.Equal(t, 2, mode, "the writer is back at FULL between transactions")

	syncs := testutil.ToFloat64(s.wal.syncs) - syncs0
	waits := testutil.ToFloat64(s.wal.waits) - waits0
	require.InDelta(t, float64(writers*each), waits, 0.5, "every transaction waited for a sync")
	require.Positive(t, syncs)
	require.LessOrEqual(t, syncs, waits)
	t.Logf("%d transactions from %d goroutines, %.0f fdatasyncs", writers*each, writers, syncs)
	n, err := testutil.GatherAndCount(reg, "anchord_sqlite_wal_syncs_total")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// TestInTxWithSynchronousNormalDoesNotSync: with synchronous=normal nothing syncs at commit, as
// before.
func TestInTxWithSynchronousNormalDoesNotSync(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), Config{DataDir: t.TempDir(), Synchronous: "normal"})
	require.NoError(t, err)
	defer s.Close()
	require.Nil(t, s.wal)
	require.NoError(t, s.InTx(context.Background(), func(ctx context.Context, tx store.Executor) error {
		return tx.SettingPut(ctx, "a", []byte("b"))
	}))
}

// BenchmarkConcurrentCommits: 64 goroutines each committing small transactions of 16 queue rows
// (intake's group commits at concurrency 64), with the WAL synced inside the write lock
// (synchronous=FULL at commit, as before walSync) and after it (InTx). It reports commits per
// second and the process's CPU per commit: with the sync inside the lock, every commit waits for
// the disk in turn and the CPU idles.
func BenchmarkConcurrentCommits(b *testing.B) {
	for _, mode := range []string{"sync-in-lock", "sync-after-lock"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Config{DataDir: b.TempDir()})
			require.NoError(b, err)
			defer s.Close()
			commit := s.InTx
			if mode == "sync-in-lock" {
				commit = func(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
					hooks, err := s.inTx(ctx, s.writer, fn)
					if err == nil {
						hooks.Run()
					}
					return err
				}
			}
			req := make([]byte, 700)
			var next atomic.Int64
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			var left atomic.Int64
			left.Store(int64(b.N))
			for range 64 {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						err := commit(ctx, func(ctx context.Context, tx store.Executor) error {
							ops := make([]store.OpQueueInsertParams, 16)
							for i := range ops {
								n := next.Add(1)
								ops[i] = store.OpQueueInsertParams{OpID: fmt.Sprintf("op-%d", n), Suffix: fmt.Sprintf("s-%d", n),
									Type: "create", Request: req, InstanceID: "bench", Lifespan: time.Hour}
							}
							_, err := tx.OpQueueUpsertMany(ctx, ops)
							return err
						})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(b.N)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
			b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/commit")
			b.ReportMetric(float64(cpu)*float64(b.N)/float64(elapsed), "cores")
		})
	}
}

// TestInTxCancelledMidTransactionLeavesAWriterAtFull: transactions whose context is cancelled
// while they run (database/sql then rolls them back from a goroutine of its own) change
// nothing, log no error, and leave the writer usable at synchronous=FULL.
func TestInTxCancelledMidTransactionLeavesAWriterAtFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs anchordtest.SyncBuffer
	s, err := Open(ctx, Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer s.Close()
	for i := range 50 {
		cctx, cancel := context.WithCancel(ctx)
		err := s.InTx(cctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.SettingPut(ctx, fmt.Sprintf("cancelled-%d", i), []byte("v")); err != nil {
				return err
			}
			cancel()
			return ctx.Err()
		})
		require.ErrorIs(t, err, context.Canceled)
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			return tx.SettingPut(ctx, fmt.Sprintf("kept-%d", i), []byte("v"))
		}))
	}
	for i := range 50 {
		_, err := s.SettingGet(ctx, fmt.Sprintf("cancelled-%d", i))
		require.ErrorIs(t, err, store.ErrNotFound)
		v, err := s.SettingGet(ctx, fmt.Sprintf("kept-%d", i))
		require.NoError(t, err)
		require.Equal(t, []byte("v"), v)
	}
	var mode int
	require.NoError(t, s.writer.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode))
	require.Equal(t, 2, mode, "the writer is at FULL")
	require.NotContains(t, logs.String(), "level=ERROR")
}
