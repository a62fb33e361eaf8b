package cosigner

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store/storetest"
)

// BenchmarkAddCheckpoint measures the add-checkpoint requests one witness serves over HTTP,
// each advancing a log by one entry with a consistency proof: 16 clients (on two cores), each for a log of
// its own, against a witness on SQLite or PostgreSQL, with and without the ML-DSA-44
// cosignature. It reports requests/s.
func BenchmarkAddCheckpoint(b *testing.B) {
	for _, backend := range storetest.Backends {
		for _, mldsa := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/mldsa=%v", backend, mldsa), func(b *testing.B) {
				// One log per client goroutine: RunParallel starts parallelism × GOMAXPROCS.
				parallelism := max(1, 16/runtime.GOMAXPROCS(0))
				clients := parallelism * runtime.GOMAXPROCS(0)
				st := storetest.Open(b, storetest.OpenerFor(b, backend))
				var keys []string
				var logs []*testLog
				for i := range clients {
					l := newTestLog(b, fmt.Sprintf("bench.example/%d", i))
					logs = append(logs, l)
					keys = append(keys, l.vkey)
				}
				known, err := NewKnownLogs(KnownLogsConfig{Static: keys})
				if err != nil {
					b.Fatal(err)
				}
				w, err := New(Config{Key: testKey(b, mldsa), Logs: known, Checkpoints: st, Logger: anchordtest.DiscardLogger()})
				if err != nil {
					b.Fatal(err)
				}
				mux := http.NewServeMux()
				w.Register(mux)
				srv := httptest.NewServer(mux)
				defer srv.Close()
				url := srv.URL + Prefix + "/add-checkpoint"
				var next atomic.Int32
				b.SetParallelism(parallelism)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					l := logs[int(next.Add(1)-1)]
					for pb.Next() {
						old := l.tree.Size()
						l.grow(1)
						resp, err := http.Post(url, "text/plain", bytes.NewReader(l.request(b, old, l.checkpoint())))
						if err != nil {
							b.Error(err)
							return
						}
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Errorf("status %d", resp.StatusCode)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			})
		}
	}
}
