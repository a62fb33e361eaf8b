package expiry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// Table is a table whose rows expire. Build one with Disposable; op_queue is registered by New.
type Table struct {
	// Name is the table and Column its expiry time, compared with the database clock.
	Name   string
	Column string
	// park: the rows are accepted operations, moved to dead_letters instead of deleted.
	park bool
}

// Disposable describes a table whose expired rows may simply be deleted. name and column MUST
// be constants of the code, and column should be indexed.
func Disposable(name, column string) Table { return Table{Name: name, Column: column} }

// opQueue is op_queue, whose expired rows are parked.
var opQueue = Table{Name: "op_queue", Column: "expires_at", park: true}

// FenceFunc checks, inside tx, that the run still holds the permit of task taskID under term,
// and fails (store.ErrLeaseLost) otherwise: taskmgr.Manager.Fence.
type FenceFunc func(ctx context.Context, tx store.TaskExecutor, taskID string, term int64) error

// Service is the data-expiry task.
type Service struct {
	cfg   Config
	st    store.Store
	fence FenceFunc
	m     *metrics

	mu     sync.Mutex
	tables []Table

	sig struct {
		ran testsignal.Signal[runResult]
	}
}

// New builds the service with op_queue registered (parked). fence is the task manager's Fence.
// The daemon registers the task with the manager that fence belongs to:
//
//	svc, err := expiry.New(cfg, st, tasks.Fence)
//	err = tasks.Register(taskmgr.Task{ID: expiry.TaskID, Interval: svc.Interval(), Run: svc.Expire})
func New(cfg Config, st store.Store, fence FenceFunc) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if fence == nil {
		return nil, errors.New("expiry: a fence is required: every batch is written under the run's permit")
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, st: st, fence: fence, m: m, tables: []Table{opQueue}}, nil
}

// Interval is the task's interval (data-expiry-check-interval).
func (s *Service) Interval() time.Duration { return s.cfg.Interval }

// Register adds a table; its rows are removed from the next run on. It refuses names that are
// not plain identifiers, tables whose rows are never disposable, and duplicates.
func (s *Service) Register(t Table) error {
	if err := store.CheckExpiryTable(t.Name, t.Column); err != nil {
		return fmt.Errorf("expiry: register: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.tables {
		if o.Name == t.Name {
			return fmt.Errorf("expiry: register %s: already registered", t.Name)
		}
	}
	s.tables = append(s.tables, t)
	return nil
}

// runResult is what a run did to each table.
type runResult struct {
	Tables map[string]tableResult
}

type tableResult struct {
	Removed int64 // deleted or parked
	Parked  int64
	Batches int
	// Capped: the run stopped at MaxBatches after a full batch; rows may be left.
	Capped bool
	Err    error
}

// Expire is the task's run: it removes expired rows under the permit term of the run, and
// returns early when the permit is lost or ctx is done.
func (s *Service) Expire(ctx context.Context, term int64) error {
	_, err := s.runOnce(ctx, term)
	return err
}

// runOnce is one run of the task under the permit term. It returns at once when the permit is
// lost or ctx is done; a failure on one table does not stop the others but is returned.
func (s *Service) runOnce(ctx context.Context, term int64) (runResult, error) {
	s.mu.Lock()
	tables := append([]Table(nil), s.tables...)
	s.mu.Unlock()
	res := runResult{Tables: make(map[string]tableResult, len(tables))}
	defer func() { s.sig.ran.Signal(res) }() // partial results too: committed batches count
	var errs []error
	for _, t := range tables {
		tr := s.expire(ctx, t, term)
		res.Tables[t.Name] = tr
		if tr.Err == nil {
			continue
		}
		if errors.Is(tr.Err, store.ErrLeaseLost) || ctx.Err() != nil {
			return res, tr.Err
		}
		errs = append(errs, tr.Err)
	}
	return res, errors.Join(errs...)
}

// expire removes the expired rows of one table, a batch per fenced transaction.
func (s *Service) expire(ctx context.Context, t Table, term int64) tableResult {
	var tr tableResult
	log := s.cfg.Logger.With("table", t.Name)
	for tr.Batches < s.cfg.MaxBatches {
		var n int64
		var parked []string
		err := s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := s.fence(ctx, tx, TaskID, term); err != nil {
				return err
			}
			var err error
			if t.park {
				parked, err = tx.OpQueueParkExpired(ctx, store.OpQueueParkExpiredParams{Limit: s.cfg.BatchSize})
				n = int64(len(parked))
			} else {
				n, err = tx.ExpiredDeleteMany(ctx, store.ExpiredDeleteParams{Table: t.Name, Column: t.Column, Limit: s.cfg.BatchSize})
			}
			return err
		})
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, store.ErrLeaseLost) {
				s.m.failures.WithLabelValues(t.Name).Inc()
				log.ErrorContext(ctx, "expire rows", "error", err)
			}
			tr.Err = fmt.Errorf("expire rows of %s: %w", t.Name, err)
			return tr
		}
		tr.Batches++
		tr.Removed += n
		s.m.expired.WithLabelValues(t.Name).Add(float64(n))
		if len(parked) > 0 {
			tr.Parked += n
			s.m.parked.WithLabelValues(t.Name).Add(float64(n))
			log.WarnContext(ctx, "expired operations parked in dead letters", "operations", n, "op_ids", first(parked, 20))
		}
		if n < int64(s.cfg.BatchSize) {
			break
		}
		if tr.Batches == s.cfg.MaxBatches {
			tr.Capped = true
			s.m.capped.WithLabelValues(t.Name).Inc()
			log.InfoContext(ctx, "batch limit reached; the next run goes on", "rows", tr.Removed, "batches", tr.Batches)
		}
	}
	if tr.Removed > 0 {
		log.InfoContext(ctx, "expired rows removed", "rows", tr.Removed, "parked", tr.Parked, "batches", tr.Batches)
	}
	return tr
}

func first(ids []string, n int) []string {
	if len(ids) <= n {
		return ids
	}
	return ids[:n]
}
