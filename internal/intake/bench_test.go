package intake

import (
	"context"
	crand "crypto/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/store"
)

// BenchmarkSubmitCreate is intake's own work for a create (parse, checks, response), with a queue
// that keeps it in memory. Creates are generated before the clock starts; run with -benchtime
// 5000x or so.
func BenchmarkSubmitCreate(b *testing.B) {
	bundle := setup(b)
	reqs := make([][]byte, b.N)
	for i := range reqs {
		_, req, err := bundle.wallet.Create()
		require.NoError(b, err)
		reqs[i] = req
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := bundle.svc.Submit(ctx, reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReserveBesideCommitting is what an accepted request's reservation waits while the
// observer marks the operations of an anchor as being indexed (Committing), again and again:
// 8,000 creates of the load generator's size, an anchor at 4,000 creates/s and the default batch
// timeout. The worst wait of the b.N reservations is reported (worst-µs), next to the time of one
// Committing with its done (commit-µs).
func BenchmarkReserveBesideCommitting(b *testing.B) {
	p := NewPending(0)
	ops := make([]store.DIDOperation, 8000)
	for i := range ops {
		req := make([]byte, 380)
		_, _ = crand.Read(req)
		ops[i] = store.DIDOperation{Suffix: "s" + strconv.Itoa(i), Request: req}
		require.True(b, p.Reserve(ops[i].Suffix, opqueue.OpIDOf(req)))
	}
	stop := make(chan struct{})
	var commits atomic.Int64
	var commitTime atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			p.Committing(ops)()
			commitTime.Add(int64(time.Since(start)))
			commits.Add(1)
		}
	})
	var worst time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		p.Reserve("new"+strconv.Itoa(i), "id")
		worst = max(worst, time.Since(start))
		i++
	}
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
	if n := commits.Load(); n > 0 {
		b.ReportMetric(float64(commitTime.Load()/n)/1e3, "commit-µs")
	}
}
