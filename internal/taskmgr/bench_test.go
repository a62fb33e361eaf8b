package taskmgr

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// BenchmarkPermitAcquire measures the acquire statement on each backend: a renewal by the
// holder (what every check does for each held task) and a refusal (what every other instance
// does).
func BenchmarkPermitAcquire(b *testing.B) {
	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			st := storetest.Open(b, storetest.OpenerFor(b, backend))
			ctx := context.Background()
			p, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: "t", Holder: "a", StaleAfter: time.Hour})
			if err != nil || !ok {
				b.Fatalf("acquire: %v %v", ok, err)
			}
			b.Run("renew", func(b *testing.B) {
				for b.Loop() {
					if _, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: "t", Holder: "a", Term: p.Term, StaleAfter: time.Hour}); err != nil || !ok {
						b.Fatalf("renew: %v %v", ok, err)
					}
				}
			})
			b.Run("refused", func(b *testing.B) {
				for b.Loop() {
					if _, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: "t", Holder: "b", StaleAfter: time.Hour}); err != nil || ok {
						b.Fatalf("refused: %v %v", ok, err)
					}
				}
			})
		})
	}
}

// BenchmarkCheck measures one check of a holder of six tasks that are not due (the size of
// the task list): a renewal and a refused start per task.
func BenchmarkCheck(b *testing.B) {
	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			st := storetest.Open(b, storetest.OpenerFor(b, backend))
			m, err := New(Config{InstanceID: "a", CheckInterval: time.Hour, Logger: anchordtest.DiscardLogger(), Registerer: prometheus.NewRegistry()}, st)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for i := range 6 {
				if err := m.Register(Task{ID: fmt.Sprintf("task-%d", i), Interval: time.Hour, Run: func(context.Context, int64) error { return nil }}); err != nil {
					b.Fatal(err)
				}
			}
			// The first check gains every permit and runs every task once.
			if res := m.runOnce(ctx); len(res.Started) != 6 {
				b.Fatalf("first check: %+v", res)
			}
			for m.activeRuns() > 0 {
				<-m.outReady
				m.settleAll(ctx)
			}
			m.runs.Wait()
			for b.Loop() {
				if res := m.runOnce(ctx); res.Errors != 0 || len(res.Started) != 0 || len(res.Gained) != 0 {
					b.Fatalf("check: %+v", res)
				}
			}
		})
	}
}
