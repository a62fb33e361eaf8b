package taskmgr

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestNewAndRegisterValidate(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	_, err := New(Config{}, st)
	require.ErrorContains(t, err, "instance id")
	_, err = New(Config{InstanceID: "a", CheckInterval: -time.Second}, st)
	require.ErrorContains(t, err, "negative")

	m, err := New(Config{InstanceID: "a"}, st)
	require.NoError(t, err)
	require.Equal(t, CheckIntervalDefault, m.cfg.CheckInterval)
	run := func(context.Context, int64) error { return nil }
	require.Error(t, m.Register(Task{ID: "", Interval: time.Second, Run: run}))
	require.Error(t, m.Register(Task{ID: "x", Interval: 0, Run: run}))
	require.Error(t, m.Register(Task{ID: "x", Interval: time.Second}))
	require.NoError(t, m.Register(Task{ID: "x", Interval: time.Second, Run: run}))
	require.ErrorContains(t, m.Register(Task{ID: "x", Interval: time.Second, Run: run}), "already registered")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	anchordtest.Eventually(t, 10*time.Second, time.Millisecond, m.running.Load)
	require.ErrorContains(t, m.Run(ctx), "already running")
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
}

// accelerated returns the NextIntervalFunc of a task whose runs follow each other every d
// while its Interval, and so the takeover threshold, stays long: a loaded machine (statements
// of hundreds of milliseconds) then causes no takeover between the managers of one test.
func accelerated(d time.Duration) func() time.Duration { return func() time.Duration { return d } }

func TestTaskRunsOnExactlyOneManager(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		const every = 200 * time.Millisecond
		rec := newRecorder(st)
		var ms []*testManager
		for i := range 3 {
			id := fmt.Sprintf("instance-%d", i)
			m := newManager(t, st, id, 100*time.Millisecond)
			task := rec.task("shared", id, 3*time.Second, 50*time.Millisecond)
			task.NextIntervalFunc = accelerated(every)
			require.NoError(t, m.Register(task))
			ms = append(ms, m.start(t))
		}
		rec.wait(t, 4)
		for _, m := range ms {
			m.stop(t)
		}
		runs := rec.sorted()
		require.GreaterOrEqual(t, len(runs), 4)
		for _, r := range runs {
			require.Equal(t, runs[0].Holder, r.Holder, "one holder, no takeover")
			require.Equal(t, runs[0].Term, r.Term)
		}
		requireSequential(t, runs, every)
		require.Equal(t, int32(1), rec.maxActive.Load())
		var takeovers float64
		for _, m := range ms {
			n := testutil.ToFloat64(m.m.runs.WithLabelValues("shared", resultOK)) + testutil.ToFloat64(m.m.runs.WithLabelValues("shared", resultLost))
			if m.InstanceID() == runs[0].Holder {
				require.GreaterOrEqual(t, n, float64(len(runs)))
			} else {
				require.Zero(t, n)
			}
			takeovers += testutil.ToFloat64(m.m.takeovers.WithLabelValues("shared"))
		}
		require.Zero(t, takeovers)
	})
}

func TestIntervalRespected(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		// One manager: nobody can take over, whatever the load, so the interval (measured by
		// the database between the end of a run and the start of the next) is the only rule.
		const interval = 200 * time.Millisecond
		rec := newRecorder(st)
		a := newManager(t, st, "a", 50*time.Millisecond)
		require.NoError(t, a.Register(rec.task("t", "a", interval, 20*time.Millisecond)))
		a.start(t)
		rec.wait(t, 3)
		a.stop(t)
		runs := rec.sorted()
		require.GreaterOrEqual(t, len(runs), 3)
		requireSequential(t, runs, interval)
	})
}

func TestSlowTaskNeverOverlapsItself(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		// Each run lasts four times its (accelerated) interval, and several checks and
		// refreshes.
		const every = 100 * time.Millisecond
		rec := newRecorder(st)
		for _, id := range []string{"a", "b"} {
			m := newManager(t, st, id, 100*time.Millisecond)
			task := rec.task("slow", id, 3*time.Second, 400*time.Millisecond)
			task.NextIntervalFunc = accelerated(every)
			require.NoError(t, m.Register(task))
			m.start(t)
		}
		rec.wait(t, 3)
		runs := rec.sorted()
		requireSequential(t, runs, every)
		require.Equal(t, int32(1), rec.maxActive.Load(), "never two runs at once")
	})
}

func TestTakeoverAfterHolderStopsRefreshing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		const check, interval = 100 * time.Millisecond, 200 * time.Millisecond
		// A dead instance holds the permit in the middle of a run and refreshes no more.
		ghost, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: "t", Holder: "ghost", StaleAfter: check + interval})
		require.NoError(t, err)
		require.True(t, ok)
		ghost, started, err := st.TaskPermitStart(ctx, store.TaskPermitStartParams{TaskID: "t", Holder: "ghost", Term: ghost.Term})
		require.NoError(t, err)
		require.True(t, started)

		rec := newRecorder(st)
		b := newManager(t, st, "b", check)
		require.NoError(t, b.Register(rec.task("t", "b", interval, 10*time.Millisecond)))
		b.start(t)
		ev := waitEvent(t, &b.sig.gained, "t")
		require.Equal(t, ghost.Term+1, ev.Term)
		p, err := st.TaskPermitGet(ctx, "t")
		require.NoError(t, err)
		require.Equal(t, "ghost", p.PreviousHolder)
		// The permit was taken once it was stale by the database clock: not before the
		// threshold.
		require.Greater(t, p.UpdatedAt.Sub(ghost.UpdatedAt), check+interval)
		require.Equal(t, 1.0, testutil.ToFloat64(b.m.takeovers.WithLabelValues("t")))
		require.Equal(t, 1.0, testutil.ToFloat64(b.m.held.WithLabelValues("t")))

		// The ghost's run does not carry over: b runs the task at once (it never finished).
		rec.wait(t, 1)
		require.Equal(t, ev.Term, rec.sorted()[0].Term)
	})
}

func TestLostPermitCancelsRunningTask(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		a := newManager(t, st, "a", 100*time.Millisecond)
		causes := make(chan error, 1)
		running := make(chan int64, 1)
		require.NoError(t, a.Register(Task{ID: "t", Interval: time.Hour, Run: func(ctx context.Context, term int64) error {
			running <- term
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}}))
		a.start(t)
		term := anchordtest.WaitOrTimeout(t, running, 20*time.Second)

		// Another instance takes the permit over (its clock says a's permit is long stale).
		future := time.Now().Add(time.Hour)
		p, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: "t", Holder: "intruder", StaleAfter: time.Minute, Now: &future})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, term+1, p.Term)

		require.ErrorIs(t, anchordtest.WaitOrTimeout(t, causes, 20*time.Second), ErrPermitLost)
		out := a.sig.finished.WaitOrTimeout(t, 20*time.Second)
		require.Equal(t, resultLost, out.Result)
		require.True(t, out.Lost)
		ev := waitEvent(t, &a.sig.lost, "t")
		require.Equal(t, term, ev.Term)
		require.Equal(t, lossTaken, ev.Reason)
		require.Equal(t, 1.0, testutil.ToFloat64(a.m.losses.WithLabelValues("t", lossTaken)))
		require.Equal(t, 1.0, testutil.ToFloat64(a.m.runs.WithLabelValues("t", resultLost)))
		require.Zero(t, testutil.ToFloat64(a.m.held.WithLabelValues("t")))

		// a's late writes under its old term are fenced off; the intruder's permit is intact.
		require.ErrorIs(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			return a.Fence(ctx, tx, "t", term)
		}), store.ErrLeaseLost)
		got, err := st.TaskPermitGet(ctx, "t")
		require.NoError(t, err)
		require.Equal(t, "intruder", got.Holder)
		require.Equal(t, store.TaskStatusIdle, got.Status)
		require.True(t, got.LastRunAt.IsZero(), "a did not record its cancelled run over the intruder's permit")
	})
}

func TestGracefulStopReleasesSoAnotherTakesOverAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		// An hour-long interval: without the release, b would wait an hour to take over.
		const check = 100 * time.Millisecond
		causes := make(chan error, 1)
		a := newManager(t, st, "a", check)
		require.NoError(t, a.Register(Task{ID: "t", Interval: time.Hour, Run: func(ctx context.Context, term int64) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}}))
		a.start(t)
		gained := waitEvent(t, &a.sig.started, "t")

		b := newManager(t, st, "b", check)
		require.NoError(t, b.Register(Task{ID: "t", Interval: time.Hour, Run: func(context.Context, int64) error { return nil }}))
		b.start(t)
		// b checks a few times and is refused.
		for range 3 {
			res := b.sig.checked.WaitOrTimeout(t, 10*time.Second)
			require.Empty(t, res.Gained)
		}

		stopped := time.Now()
		a.stop(t)
		require.ErrorIs(t, anchordtest.WaitOrTimeout(t, causes, time.Second), context.Canceled, "the run was cancelled and waited for")
		require.Equal(t, resultStopped, a.sig.finished.WaitOrTimeout(t, time.Second).Result)
		waitEvent(t, &a.sig.released, "t")
		ev := waitEvent(t, &b.sig.gained, "t")
		require.Less(t, time.Since(stopped), 5*time.Second)
		require.Equal(t, gained.Term+1, ev.Term)
		require.Zero(t, testutil.ToFloat64(b.m.takeovers.WithLabelValues("t")), "a release is not a takeover")
		p, err := st.TaskPermitGet(ctx, "t")
		require.NoError(t, err)
		require.Equal(t, "b", p.Holder)
		require.False(t, p.LastRunAt.IsZero(), "a finished its run before releasing")
	})
}

func TestNextIntervalAccelerates(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	rec := newRecorder(st)
	a := newManager(t, st, "a", 50*time.Millisecond)
	task := rec.task("t", "a", time.Hour, time.Millisecond)
	var calls atomic.Int32
	task.NextIntervalFunc = func() time.Duration {
		if calls.Add(1) == 2 {
			return 2 * time.Hour // above Interval: ignored
		}
		return 100 * time.Millisecond
	}
	require.NoError(t, a.Register(task))
	a.start(t)
	rec.wait(t, 2) // the second run is due 100 ms after the first, not an hour
	a.stop(t)
	runs := rec.sorted()
	requireSequential(t, runs, 100*time.Millisecond)
	require.Len(t, runs, 2, "after the second run the interval is an hour again")
}

func TestPanickingTaskIsRecovered(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	a := newManager(t, st, "a", 50*time.Millisecond)
	var n atomic.Int32
	boom := errors.New("boom")
	require.NoError(t, a.Register(Task{ID: "t", Interval: 200 * time.Millisecond, Run: func(context.Context, int64) error {
		switch n.Add(1) {
		case 1:
			panic("task bug")
		case 2:
			return boom
		}
		return nil
	}}))
	a.start(t)
	var results []string
	for range 3 {
		results = append(results, a.sig.finished.WaitOrTimeout(t, 20*time.Second).Result)
	}
	require.Equal(t, []string{resultPanic, resultError, resultOK}, results)
	require.Equal(t, 1.0, testutil.ToFloat64(a.m.runs.WithLabelValues("t", resultPanic)))
}

func TestRunOnceReportsWhatItDid(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	a := newManager(t, st, "a", time.Second)
	ran := make(chan int64, 10)
	require.NoError(t, a.Register(Task{ID: "t", Interval: time.Hour, Run: func(_ context.Context, term int64) error {
		ran <- term
		return nil
	}}))
	require.NoError(t, a.Register(Task{ID: "u", Interval: time.Hour, Run: func(context.Context, int64) error { return nil }}))
	// Another instance holds u.
	_, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: "u", Holder: "b", StaleAfter: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	res := a.runOnce(ctx)
	require.Equal(t, checkResult{Gained: []string{"t"}, Started: []string{"t"}}, res)
	require.Equal(t, int64(1), anchordtest.WaitOrTimeout(t, ran, 10*time.Second))
	<-a.outReady
	a.settleAll(ctx)
	a.runs.Wait()

	// Renewal: nothing gained, and the task is not due for an hour.
	require.Equal(t, checkResult{}, a.runOnce(ctx))
	p, err := st.TaskPermitGet(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, store.TaskStatusIdle, p.Status)
	require.False(t, p.LastRunAt.IsZero())
}
