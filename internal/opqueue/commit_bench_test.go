package opqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// syncingStore hides the store's early commit: the committer then waits for each group's sync
// before it commits the next, as before the pipeline.
type syncingStore struct{ store.Store }

// BenchmarkAddsFromManyCallers: 64 (and 8) callers adding operations of ~700 bytes on SQLite, the group
// committer pipelined (the next group commits while the last one's WAL sync runs) and not. It
// reports Adds per second and the process's CPU per Add.
func BenchmarkAddsFromManyCallers(b *testing.B) {
	for _, c := range []struct {
		mode    string
		callers int
	}{{"wait-for-sync", 64}, {"pipelined", 64}, {"wait-for-sync", 8}, {"pipelined", 8}} {
		mode := c.mode
		b.Run(fmt.Sprintf("%s/callers=%d", c.mode, c.callers), func(b *testing.B) {
			var st store.Store = storetest.Open(b, storetest.SQLiteOpener(b))
			if mode == "wait-for-sync" {
				st = syncingStore{st}
			}
			q, err := New(Config{
				InstanceID: "bench", MaxBacklog: 1 << 30,
				Redelivery: pubsub.RedeliveryConfig{MaxAttempts: 3, InitialInterval: time.Second, Multiplier: 2, MaxInterval: time.Minute},
				Registerer: prometheus.NewRegistry(),
			}, st)
			require.NoError(b, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- q.Run(ctx) }()
			req := make([]byte, 700)
			var next, left atomic.Int64
			left.Store(int64(b.N))
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range c.callers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						n := next.Add(1)
						if err := q.Add(ctx, NewOp{Suffix: fmt.Sprintf("s-%d", n), Type: "create", Request: append([]byte(fmt.Sprint(n)), req...)}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			b.StopTimer()
			cancel()
			require.NoError(b, <-done)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "adds/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/add")
		})
	}
}
