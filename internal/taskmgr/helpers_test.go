package taskmgr

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
)

// testManager is a Manager with its registry and a way to stop its Run.
type testManager struct {
	*Manager
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func newManager(t *testing.T, st store.TaskExecutor, id string, check time.Duration) *testManager {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(Config{InstanceID: id, CheckInterval: check, Logger: anchordtest.Logger(t).With("instance", id), Registerer: reg}, st)
	require.NoError(t, err)
	m.sig.checked.Init(t)
	m.sig.gained.Init(t)
	m.sig.lost.Init(t)
	m.sig.started.Init(t)
	m.sig.finished.Init(t)
	m.sig.released.Init(t)
	return &testManager{Manager: m, reg: reg}
}

// start runs the manager until stop or the end of the test.
func (tm *testManager) start(t *testing.T) *testManager {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tm.cancel = cancel
	tm.done = make(chan error, 1)
	go func() { tm.done <- tm.Run(ctx) }()
	t.Cleanup(func() { tm.stop(t) })
	return tm
}

func (tm *testManager) stop(t *testing.T) {
	t.Helper()
	tm.once.Do(func() {
		tm.cancel()
		require.NoError(t, anchordtest.WaitOrTimeout(t, tm.done, 30*time.Second))
	})
}

// waitEvent waits for a permit event of task.
func waitEvent(t *testing.T, sig interface {
	WaitOrTimeout(testing.TB, time.Duration) permitEvent
}, task string,
) permitEvent {
	t.Helper()
	for {
		ev := sig.WaitOrTimeout(t, 20*time.Second)
		if ev.TaskID == task {
			return ev
		}
	}
}

// record is one run as the task saw it, on the database clock.
type record struct {
	Holder     string
	Term       int64
	Start, End time.Time
	Cause      error
}

// recorder builds tasks that record their runs and count how many run at once.
type recorder struct {
	st        store.Store
	mu        sync.Mutex
	runs      []record
	active    atomic.Int32
	maxActive atomic.Int32
	ended     chan record
}

func newRecorder(st store.Store) *recorder {
	return &recorder{st: st, ended: make(chan record, 1000)}
}

// task returns a task that holds for d (or until cancelled) and records the run.
func (r *recorder) task(id, holder string, interval, d time.Duration) Task {
	return Task{ID: id, Interval: interval, Run: func(ctx context.Context, term int64) error {
		n := r.active.Add(1)
		for {
			m := r.maxActive.Load()
			if n <= m || r.maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		bg := context.WithoutCancel(ctx)
		start, err := r.st.Now(bg)
		if err != nil {
			r.active.Add(-1)
			return err
		}
		loop.Sleep(ctx, d)
		cause, ctxErr := context.Cause(ctx), ctx.Err() // one observation: recorded and returned
		end, err := r.st.Now(bg)
		r.active.Add(-1)
		if err != nil {
			return err
		}
		rec := record{Holder: holder, Term: term, Start: start, End: end, Cause: cause}
		r.mu.Lock()
		r.runs = append(r.runs, rec)
		r.mu.Unlock()
		r.ended <- rec
		return ctxErr
	}}
}

func (r *recorder) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		anchordtest.WaitOrTimeout(t, r.ended, 30*time.Second)
	}
}

// sorted returns the runs by start.
func (r *recorder) sorted() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]record(nil), r.runs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// requireSequential checks that no two runs overlapped and that each started at least gap
// after the previous one ended.
func requireSequential(t *testing.T, runs []record, gap time.Duration) {
	t.Helper()
	for i := 1; i < len(runs); i++ {
		require.GreaterOrEqual(t, runs[i].Start.Sub(runs[i-1].End), gap,
			"run %d (%s term %d) started %s after run %d ended", i, runs[i].Holder, runs[i].Term,
			runs[i].Start.Sub(runs[i-1].End), i-1)
	}
}
