package taskmgr

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// Task is a periodic task that runs on one instance of the cluster at a time.
type Task struct {
	// ID names the task and its permit ("data-expiry").
	ID string
	// Interval is the least time between the end of a run and the start of the next.
	Interval time.Duration
	// Run does one run. ctx is cancelled when the manager stops or loses the permit; Run MUST
	// return soon after. term is the permit's term for this run: a write that must not happen
	// twice is made in a transaction that calls Manager.Fence with it (see the package doc).
	Run func(ctx context.Context, term int64) error
	// NextIntervalFunc, if set, is called after each run; a result in (0, Interval) makes the
	// next run due that much after this one ended (Orb's RegisterTaskEx acceleration, e.g.
	// Interval/3 while a backlog remains). Anything else means Interval. The acceleration is
	// this instance's: an instance that takes the permit over starts with Interval, and no run
	// starts sooner than the next check, so values below CheckInterval act as CheckInterval.
	NextIntervalFunc func() time.Duration
}

// Manager runs registered tasks, each only while this instance holds the task's permit.
type Manager struct {
	cfg     Config
	st      store.TaskExecutor
	m       *metrics
	running atomic.Bool

	mu    sync.Mutex
	tasks []Task

	// Owned by the goroutine in Run (or a test calling runOnce/settle directly).
	states map[string]*taskState

	outMu    sync.Mutex
	outcomes []runOutcome
	outReady chan struct{} // capacity 1; a run's goroutine signals after appending its outcome
	runs     sync.WaitGroup

	sig testSignals
}

// taskState is what the manager knows of one task's permit.
type taskState struct {
	task Task
	// term is the term of the permit this instance holds; 0 if it holds none.
	term int64
	// nextInterval is the wait before the next run: Interval, or the last run's acceleration.
	nextInterval time.Duration
	// run is the run in progress, nil if none.
	run *activeRun
	// finishPending: the permit may be left running by this instance (a Start whose answer was
	// lost, a Finish that failed); it is finished, idempotently, before anything else.
	finishPending bool
}

// testSignals let tests wait for state changes; they do nothing unless initialised.
type testSignals struct {
	checked  testsignal.Signal[checkResult]
	gained   testsignal.Signal[permitEvent]
	lost     testsignal.Signal[permitEvent]
	started  testsignal.Signal[permitEvent]
	finished testsignal.Signal[runOutcome]
	released testsignal.Signal[permitEvent]
}

type permitEvent struct {
	TaskID string
	Term   int64
	Reason string
}

// checkResult is what one check did.
type checkResult struct {
	Gained  []string
	Lost    []string
	Started []string
	Errors  int
}

// New builds a manager over st. Register tasks, then call Run.
func New(cfg Config, st store.TaskExecutor) (*Manager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{cfg: cfg, st: st, m: m, states: map[string]*taskState{}, outReady: make(chan struct{}, 1)}, nil
}

// InstanceID returns the holder id this manager acquires permits under.
func (m *Manager) InstanceID() string { return m.cfg.InstanceID }

// Register adds a task. It may be called before or during Run; a task registered during Run is
// considered at the next check.
func (m *Manager) Register(t Task) error {
	if t.ID == "" || t.Interval <= 0 || t.Run == nil {
		return fmt.Errorf("taskmgr: register %q: a task needs an id, a positive interval and a run function", t.ID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.tasks {
		if o.ID == t.ID {
			return fmt.Errorf("taskmgr: register %q: already registered", t.ID)
		}
	}
	m.tasks = append(m.tasks, t)
	return nil
}

// Fence checks, inside the transaction of tx, that this instance still runs taskID under term,
// and refreshes the permit. On PostgreSQL it also locks the permit row until the transaction
// ends, so no other instance can take the permit over between the check and the commit. A
// task calls it in every transaction whose writes must not happen twice and rolls back on
// error (store.ErrLeaseLost: another instance holds the permit, or the run is over).
func (m *Manager) Fence(ctx context.Context, tx store.TaskExecutor, taskID string, term int64) error {
	if err := tx.TaskPermitRefresh(ctx, store.TaskPermitFence{TaskID: taskID, Holder: m.cfg.InstanceID, Term: term}); err != nil {
		return fmt.Errorf("fence task %s: %w", taskID, err)
	}
	return nil
}

// Run checks the permits every CheckInterval (less up to 10 % of jitter, so that a holder
// always renews before the stale threshold of CheckInterval + interval) and runs the due tasks
// it holds, each in a goroutine it waits for. When ctx is done it cancels the runs, waits for
// them, releases its permits so that another instance takes over at its next check, and
// returns nil. It may be called again after it returned; not twice at once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.running.CompareAndSwap(false, true) {
		return errors.New("taskmgr: Run is already running")
	}
	defer m.running.Store(false)
	m.states = map[string]*taskState{}
	m.cfg.Logger.InfoContext(ctx, "task manager started", "instance_id", m.cfg.InstanceID, "check_interval", m.cfg.CheckInterval)

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			m.shutdown(ctx)
			return nil
		case <-m.outReady:
			m.settleAll(ctx)
		case <-timer.C:
			m.runOnce(ctx)
			timer.Reset(m.checkWait())
		}
	}
}

// checkWait is CheckInterval less up to 10 %: instances drift apart, and never check later
// than CheckInterval after their last renewal.
func (m *Manager) checkWait() time.Duration {
	d := m.cfg.CheckInterval
	return d - time.Duration(rand.Int64N(int64(d/10)+1))
}

// runOnce is one check: for each task without a run in progress, settle a pending finish,
// acquire or renew the permit, and start a run if it is due.
func (m *Manager) runOnce(ctx context.Context) checkResult {
	var res checkResult
	for _, st := range m.syncTasks() {
		if st.run != nil || ctx.Err() != nil {
			continue // a run's own loop refreshes its permit
		}
		m.check(ctx, st, &res)
	}
	m.sig.checked.Signal(res)
	return res
}

// syncTasks returns the state of every registered task, in id order.
func (m *Manager) syncTasks() []*taskState {
	m.mu.Lock()
	tasks := append([]Task(nil), m.tasks...)
	m.mu.Unlock()
	out := make([]*taskState, 0, len(tasks))
	for _, t := range tasks {
		st, ok := m.states[t.ID]
		if !ok {
			st = &taskState{task: t, nextInterval: t.Interval}
			m.states[t.ID] = st
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].task.ID < out[j].task.ID })
	return out
}

func (m *Manager) fence(st *taskState) store.TaskPermitFence {
	return store.TaskPermitFence{TaskID: st.task.ID, Holder: m.cfg.InstanceID, Term: st.term}
}

// staleAfter is the takeover threshold of a task: CheckInterval + its interval.
func (m *Manager) staleAfter(t Task) time.Duration { return m.cfg.CheckInterval + t.Interval }

func (m *Manager) check(ctx context.Context, st *taskState, res *checkResult) {
	id := st.task.ID
	log := m.cfg.Logger.With("task", id)
	if st.finishPending && st.term != 0 {
		err := m.st.TaskPermitFinish(ctx, m.fence(st))
		switch {
		case err == nil:
			st.finishPending = false
		case errors.Is(err, store.ErrLeaseLost):
			m.lose(ctx, st, lossTaken, res)
			return
		default:
			m.checkError(ctx, id, "finish the last run", err, res)
			return
		}
	}
	st.finishPending = false

	p, ok, err := m.st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{
		TaskID: id, Holder: m.cfg.InstanceID, Term: st.term, StaleAfter: m.staleAfter(st.task),
	})
	if err != nil {
		m.checkError(ctx, id, "acquire permit", err, res)
		return
	}
	if !ok {
		if st.term != 0 {
			m.lose(ctx, st, lossTaken, res)
		}
		return
	}
	if p.Term != st.term {
		if st.term != 0 {
			m.lose(ctx, st, lossTaken, res) // our term ended (a takeover and back, or a restart)
		}
		st.term = p.Term
		st.nextInterval = st.task.Interval
		m.m.held.WithLabelValues(id).Set(1)
		takeover := p.PreviousHolder != "" && p.PreviousHolder != m.cfg.InstanceID
		if takeover {
			m.m.takeovers.WithLabelValues(id).Inc()
		}
		log.InfoContext(ctx, "permit gained", "term", p.Term, "previous_holder", p.PreviousHolder, "takeover", takeover)
		res.Gained = append(res.Gained, id)
		m.sig.gained.Signal(permitEvent{TaskID: id, Term: p.Term})
	}
	if p.Status == store.TaskStatusRunning {
		// Ours, running, and no run here: a run of ours whose end was never recorded. Close it.
		log.WarnContext(ctx, "permit left running by this instance; finishing it", "term", p.Term)
		st.finishPending = true
		return
	}

	sent := time.Now()
	_, started, err := m.st.TaskPermitStart(ctx, store.TaskPermitStartParams{
		TaskID: id, Holder: m.cfg.InstanceID, Term: st.term, Interval: st.nextInterval,
	})
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		m.lose(ctx, st, lossTaken, res)
		return
	case err != nil:
		// The start may have committed: finish it (idempotently) before trying again.
		st.finishPending = true
		m.checkError(ctx, id, "start run", err, res)
		return
	case !started:
		return // not due yet
	}
	res.Started = append(res.Started, id)
	m.start(ctx, st, sent)
}

func (m *Manager) checkError(ctx context.Context, id, what string, err error, res *checkResult) {
	if ctx.Err() != nil {
		return // stopping: the statement was cancelled, not failed
	}
	res.Errors++
	m.m.checkErrors.WithLabelValues(id).Inc()
	m.cfg.Logger.WarnContext(ctx, "task permit check failed", "task", id, "step", what, "error", err)
}

// lose forgets a permit this instance no longer holds.
func (m *Manager) lose(ctx context.Context, st *taskState, reason string, res *checkResult) {
	if st.term == 0 {
		return
	}
	m.cfg.Logger.WarnContext(ctx, "permit lost", "task", st.task.ID, "term", st.term, "reason", reason)
	m.m.losses.WithLabelValues(st.task.ID, reason).Inc()
	m.m.held.WithLabelValues(st.task.ID).Set(0)
	m.sig.lost.Signal(permitEvent{TaskID: st.task.ID, Term: st.term, Reason: reason})
	if res != nil {
		res.Lost = append(res.Lost, st.task.ID)
	}
	st.term = 0
	st.finishPending = false
}

// report is called by a run's goroutine when the run is over.
func (m *Manager) report(out runOutcome) {
	m.outMu.Lock()
	m.outcomes = append(m.outcomes, out)
	m.outMu.Unlock()
	select {
	case m.outReady <- struct{}{}:
	default:
	}
}

// settleAll applies the outcomes of the runs that ended.
func (m *Manager) settleAll(ctx context.Context) {
	m.outMu.Lock()
	outs := m.outcomes
	m.outcomes = nil
	m.outMu.Unlock()
	for _, out := range outs {
		m.settle(ctx, out)
	}
}

func (m *Manager) settle(ctx context.Context, out runOutcome) {
	st := m.states[out.TaskID]
	st.run = nil
	if out.Term != st.term {
		return // cannot happen while checks skip tasks that run; kept as a guard
	}
	switch {
	case out.Lost:
		m.lose(ctx, st, lossTaken, nil)
	case out.FinishPending:
		st.finishPending = true
	}
	st.nextInterval = out.NextInterval
}

// activeRuns counts the runs in progress.
func (m *Manager) activeRuns() int {
	n := 0
	for _, st := range m.states {
		if st.run != nil {
			n++
		}
	}
	return n
}

// shutdown waits for the runs (their contexts derive from ctx, which is done), then releases
// every permit still held.
func (m *Manager) shutdown(ctx context.Context) {
	for m.activeRuns() > 0 {
		<-m.outReady
		m.settleAll(ctx)
	}
	m.runs.Wait()
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CheckInterval)
	defer cancel()
	for _, st := range m.syncTasks() {
		if st.term == 0 {
			continue
		}
		if st.finishPending {
			if err := m.st.TaskPermitFinish(bg, m.fence(st)); err != nil {
				m.cfg.Logger.WarnContext(bg, "finish at shutdown", "task", st.task.ID, "error", err)
			}
		}
		err := m.st.TaskPermitRelease(bg, m.fence(st))
		if err != nil {
			// Released or not, the permit goes stale after CheckInterval + interval.
			m.cfg.Logger.WarnContext(bg, "release permit", "task", st.task.ID, "term", st.term, "error", err)
		} else {
			m.cfg.Logger.InfoContext(bg, "permit released", "task", st.task.ID, "term", st.term)
			m.sig.released.Signal(permitEvent{TaskID: st.task.ID, Term: st.term})
		}
		m.m.held.WithLabelValues(st.task.ID).Set(0)
		st.term = 0
	}
	m.cfg.Logger.InfoContext(bg, "task manager stopped")
}
