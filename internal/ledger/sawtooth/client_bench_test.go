package sawtooth_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// BenchmarkBuild measures building and signing one anchor batch (two signatures).
func BenchmarkBuild(b *testing.B) {
	builder := newBuilder(b, sawtooth.BuilderConfig{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := builder.Build(sawtooth.BuildParams{Anchor: fmt.Sprintf("%d.QmBench", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSubmit measures batches submitted per second to an in-process devledger without
// faults (which verifies both signatures of every batch), from one client and from three
// clients at once, each with its own connection pool. Batches are built before the clock
// starts.
func BenchmarkSubmit(b *testing.B) {
	for _, clients := range []int{1, 3} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			l := devledgertest.Start(b, devledger.Config{Logger: anchordtest.DiscardLogger()})
			builder := newBuilder(b, sawtooth.BuilderConfig{})
			batches := make([][]byte, b.N)
			for i := range batches {
				batch, err := builder.Build(sawtooth.BuildParams{Anchor: fmt.Sprintf("%d.QmBench", i+1)})
				require.NoError(b, err)
				batches[i] = batch.Bytes
			}
			cs := make([]*sawtooth.Client, clients)
			for i := range cs {
				cs[i] = newClient(b, l.URL, 10*time.Second)
			}

			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan string, clients)
			for w, c := range cs {
				wg.Go(func() {
					for i := w; i < len(batches); i += clients {
						if r := c.Submit(b.Context(), batches[i], ""); r.Class != ledger.Accepted {
							errs <- r.String()
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			close(errs)
			for e := range errs {
				b.Fatal(e)
			}
			require.Equal(b, b.N, l.Stats().Accepted)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "batches/s")
		})
	}
}
