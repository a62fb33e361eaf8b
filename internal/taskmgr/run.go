package taskmgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// Causes of a run's cancellation, as context.Cause reports them to the task.
var (
	// ErrPermitLost: another instance took the permit over; the run's writes would be fenced off.
	ErrPermitLost = errors.New("task permit lost")
	// ErrPermitUntrusted: no refresh of the permit succeeded within the trust window, so another
	// instance may take it over at any moment.
	ErrPermitUntrusted = errors.New("task permit no longer trusted")
)

// activeRun is a run in progress.
type activeRun struct {
	term    int64
	started time.Time
}

// runOutcome is how a run ended, reported by its goroutine to the manager.
type runOutcome struct {
	TaskID string
	Term   int64
	Err    error
	Result string
	// Lost: a fenced write found another holder.
	Lost bool
	// Untrusted: the run was cancelled because no refresh succeeded within the trust window.
	Untrusted bool
	// FinishPending: the permit may still say running (Finish failed); the manager retries.
	FinishPending bool
	NextInterval  time.Duration
	Duration      time.Duration
}

// trust returns the timing of a task's runs: refresh is how often the permit is refreshed and
// window is how long after the start of the last successful refresh (or of the Start) the
// permit is trusted. Another instance may take the permit over once its updated_at, written by
// the database at or after the statement was sent, is older than threshold by the database
// clock; so a window of threshold − margin on the local monotonic clock ends before any
// takeover can happen, as long as the two clocks run at about the same rate. The margin, a
// fifth of the threshold, covers rate drift and the time a task takes to see its cancellation.
// Refreshing every third of the threshold (at most every CheckInterval) leaves room for a
// failed refresh within the window.
func (m *Manager) trust(t Task) (refresh, window time.Duration) {
	threshold := m.staleAfter(t)
	return min(m.cfg.CheckInterval, threshold/3), threshold - threshold/5
}

// start launches a run whose Start statement was sent at sent.
func (m *Manager) start(ctx context.Context, st *taskState, sent time.Time) {
	runCtx, cancel := context.WithCancelCause(ctx)
	st.run = &activeRun{term: st.term, started: time.Now()}
	m.cfg.Logger.DebugContext(ctx, "run started", "task", st.task.ID, "term", st.term)
	m.sig.started.Signal(permitEvent{TaskID: st.task.ID, Term: st.term})
	task, term := st.task, st.term
	m.runs.Go(func() {
		defer cancel(nil)
		out := m.execute(runCtx, cancel, task, term, sent)
		m.observe(ctx, out)
		m.report(out)
	})
}

// execute runs the task in a goroutine and, until it returns, refreshes the permit; it cancels
// the task when the permit is lost or no longer trusted, and finishes the run (fenced) after.
//
// The trust deadline is a timer of its own, so a refresh stuck in a stalled database cannot
// delay the cancellation. Refreshes go on after a cancellation, until the task has returned: as
// long as they succeed, no other instance starts a run while this one is still winding down.
func (m *Manager) execute(ctx context.Context, cancel context.CancelCauseFunc, task Task, term int64, sent time.Time) runOutcome {
	out := runOutcome{TaskID: task.ID, Term: term}
	fence := store.TaskPermitFence{TaskID: task.ID, Holder: m.cfg.InstanceID, Term: term}
	refresh, window := m.trust(task)
	bg := context.WithoutCancel(ctx)
	log := m.cfg.Logger.With("task", task.ID, "term", term)

	distrust := time.AfterFunc(time.Until(sent.Add(window)), func() {
		if ctx.Err() == nil {
			log.WarnContext(ctx, "no permit refresh within the trust window; cancelling the run", "window", window)
		}
		cancel(ErrPermitUntrusted)
	})
	defer distrust.Stop()

	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- call(ctx, task, term) }()

	timer := time.NewTimer(jitterDown(refresh))
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			out.Duration = time.Since(began)
			out.Err = err
			out.Untrusted = errors.Is(context.Cause(ctx), ErrPermitUntrusted)
			m.finish(bg, &out, fence, window, log)
			out.Result = result(ctx, err)
			out.NextInterval = nextInterval(task)
			return out
		case <-timer.C:
		}
		rctx, rcancel := context.WithTimeout(bg, window)
		at := time.Now()
		err := m.st.TaskPermitRefresh(rctx, fence)
		rcancel()
		switch {
		case err == nil:
			if ctx.Err() == nil {
				distrust.Reset(time.Until(at.Add(window)))
			}
		case errors.Is(err, store.ErrLeaseLost):
			if !out.Lost {
				log.WarnContext(ctx, "permit lost during run; cancelling it", "error", err)
			}
			out.Lost = true
			cancel(ErrPermitLost)
		default:
			m.m.checkErrors.WithLabelValues(task.ID).Inc()
			log.WarnContext(ctx, "refresh permit", "error", err)
		}
		timer.Reset(jitterDown(refresh))
	}
}

// finish records the end of the run, fenced, unless the permit is known to be lost.
func (m *Manager) finish(ctx context.Context, out *runOutcome, fence store.TaskPermitFence, timeout time.Duration, log *slog.Logger) {
	if out.Lost {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := m.st.TaskPermitFinish(fctx, fence)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrLeaseLost):
		out.Lost = true
	default:
		m.m.checkErrors.WithLabelValues(fence.TaskID).Inc()
		log.WarnContext(ctx, "finish run; will retry", "error", err)
		out.FinishPending = true
	}
}

func (m *Manager) observe(ctx context.Context, out runOutcome) {
	// Counted here, before the outcome is announced, so the metric never lags the event.
	if out.Untrusted {
		m.m.losses.WithLabelValues(out.TaskID, lossUntrusted).Inc()
	}
	m.m.runs.WithLabelValues(out.TaskID, out.Result).Inc()
	m.m.runDuration.WithLabelValues(out.TaskID).Observe(out.Duration.Seconds())
	log := m.cfg.Logger.With("task", out.TaskID, "term", out.Term, "duration", out.Duration, "result", out.Result)
	if out.Err != nil && out.Result != resultStopped && out.Result != resultLost {
		log.ErrorContext(ctx, "run failed", "error", out.Err)
	} else {
		log.DebugContext(ctx, "run ended")
	}
	m.sig.finished.Signal(out)
}

// result labels how a run ended. A task cancelled by the manager usually returns the
// context's error; the cause tells why it was cancelled.
func result(ctx context.Context, err error) string {
	var pe *panicError
	switch {
	case err == nil:
		return resultOK
	case errors.As(err, &pe):
		return resultPanic
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.Cause(ctx))):
		if c := context.Cause(ctx); errors.Is(c, ErrPermitLost) || errors.Is(c, ErrPermitUntrusted) {
			return resultLost
		}
		return resultStopped
	}
	return resultError
}

func nextInterval(t Task) time.Duration {
	if t.NextIntervalFunc == nil {
		return t.Interval
	}
	if d := t.NextIntervalFunc(); d > 0 && d < t.Interval {
		return d
	}
	return t.Interval
}

type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("task panicked: %v\n%s", e.value, e.stack) }

// call runs the task, turning a panic into an error so that one task cannot take the
// manager, and every other task of the instance, down with it.
func call(ctx context.Context, t Task, term int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: debug.Stack()}
		}
	}()
	return t.Run(ctx, term)
}

// jitterDown returns d less up to 10 %.
func jitterDown(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - time.Duration(rand.Int64N(int64(d/10)+1))
}
