package submitter

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// BenchmarkSubmitters measures batches submitted per second by one and by three submitters
// against a fault-free development ledger, from the first claim until every batch is
// recorded as submitted. Recording the anchors (signing the batches) is not timed.
//
//	ANCHORD_TEST_DATABASE_URL=… go test -run '^$' -bench Submitters -benchtime 3x ./internal/submitter/
func BenchmarkSubmitters(b *testing.B) {
	const perIteration = 2000
	for _, backend := range storetest.Backends {
		for _, n := range []int{1, 3} {
			b.Run(fmt.Sprintf("store=%s/submitters=%d", backend, n), func(b *testing.B) {
				st := storetest.Open(b, storetest.OpenerFor(b, backend))
				l := devledgertest.Start(b, devledger.Config{Logger: anchordtest.DiscardLogger()})
				client, err := sawtooth.New(sawtooth.Config{URL: l.URL, Timeout: 5 * time.Second})
				require.NoError(b, err)
				b.Cleanup(client.CloseIdleConnections)
				w := newLedgerWriter(b, st)
				var elapsed time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					var wg sync.WaitGroup
					for part := range 4 {
						wg.Go(func() {
							_, err := recordAnchors(st, w, fmt.Sprintf("I%dP%d", i, part), perIteration/4, 250)
							assert.NoError(b, err)
						})
					}
					wg.Wait()
					elapsed += runSubmitters(b, st, client, n, fmt.Sprintf("i%d", i))
				}
				b.ReportMetric(float64(perIteration*b.N)/elapsed.Seconds(), "batches/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// runSubmitters runs n submitters until no batch is left unsubmitted and returns how long that
// took.
func runSubmitters(b *testing.B, st store.Store, client *sawtooth.Client, n int, prefix string) time.Duration {
	b.Helper()
	requeue := func(context.Context, store.Executor, store.Anchor) error { return nil }
	ctx, cancel := context.WithCancel(context.Background())
	var loops sync.WaitGroup
	b.StartTimer()
	start := time.Now()
	for k := range n {
		s, err := New(Config{InstanceID: fmt.Sprintf("%s-%d", prefix, k), RequeueFunc: requeue, Interval: 10 * time.Millisecond,
			ClaimLimit: 64, Logger: anchordtest.DiscardLogger(), Registerer: prometheus.NewRegistry()}, st, client)
		require.NoError(b, err)
		loops.Go(func() { assert.NoError(b, s.Run(ctx)) })
	}
	for {
		c, err := st.LedgerBatchCount(context.Background())
		require.NoError(b, err)
		if c.Unsubmitted == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling the database: nothing to signal across submitters
	}
	took := time.Since(start)
	b.StopTimer()
	cancel()
	loops.Wait()
	return took
}
