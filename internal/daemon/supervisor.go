package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Stage names, in shutdown order. Components of one stage stop together; a stage starts
// stopping only after every earlier stage has stopped, so nothing is torn down while a
// component that depends on it still runs:
//
//	http       stops accepting first, so no new operation is accepted during shutdown;
//	consumers  stop taking messages, handing back what they hold, while writers still run;
//	writers    flush: the batch writer cuts and anchors what is pending, then exits;
//	broker     closes once nothing publishes or consumes any more;
//	database   closes last, since every stage above writes to it (its WAL checkpointer stops with it).
const (
	StageHTTP      = "http"
	StageConsumers = "consumers"
	StageWriters   = "writers"
	StageBroker    = "broker"
	StageDatabase  = "database"
)

var stageOrder = []string{StageHTTP, StageConsumers, StageWriters, StageBroker, StageDatabase}

// component is a long-running part of the daemon.
type component struct {
	name  string
	stage string
	run   func(ctx context.Context) error
}

// closer releases a resource once its stage has stopped.
type closer struct {
	name  string
	stage string
	close func()
}

// supervisor runs components under one errgroup and stops them stage by stage.
type supervisor struct {
	logger     *slog.Logger
	timeout    time.Duration
	components []component
	closers    []closer
}

func (s *supervisor) add(stage, name string, run func(ctx context.Context) error) {
	s.components = append(s.components, component{name: name, stage: stage, run: run})
}

func (s *supervisor) onStop(stage, name string, fn func()) {
	s.closers = append(s.closers, closer{name: name, stage: stage, close: fn})
}

// abort releases what was registered when assembly failed before run: every closer, in stage
// order.
func (s *supervisor) abort() {
	for _, st := range stageOrder {
		for _, c := range s.closers {
			if c.stage == st {
				c.close()
			}
		}
	}
}

// run starts every component and blocks until ctx is done or a component returns, then shuts
// everything down in stage order. It returns the first component error, if any.
func (s *supervisor) run(ctx context.Context) error {
	// Each stage gets its own context, detached from ctx: cancelling ctx (a signal) must not
	// stop every component at once, only start the ordered shutdown.
	stageCtx := make(map[string]context.Context, len(stageOrder))
	stageCancel := make(map[string]context.CancelFunc, len(stageOrder))
	for _, st := range stageOrder {
		stageCtx[st], stageCancel[st] = context.WithCancel(context.WithoutCancel(ctx))
	}
	defer func() {
		for _, c := range stageCancel {
			c()
		}
	}()

	g, gctx := errgroup.WithContext(context.WithoutCancel(ctx))
	stageDone := make(map[string]*sync.WaitGroup, len(stageOrder))
	for _, st := range stageOrder {
		stageDone[st] = &sync.WaitGroup{}
	}
	var firstErr error
	var errOnce sync.Once
	for _, c := range s.components {
		wg := stageDone[c.stage]
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			err := c.run(stageCtx[c.stage])
			if err == nil && stageCtx[c.stage].Err() == nil {
				err = fmt.Errorf("%s stopped unexpectedly", c.name)
			}
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("%s: %w", c.name, err) })
				s.logger.Error("part failed", "part", c.name, "error", err)
			}
			return err
		})
	}

	select {
	case <-ctx.Done():
		s.logger.Info("shutdown requested", "cause", context.Cause(ctx))
	case <-gctx.Done():
		s.logger.Error("shutting down after a component failure", "error", firstErr)
	}

	allStopped := true
	for _, st := range stageOrder {
		start := time.Now()
		s.logger.Info("shutdown: stopping stage", "stage", st)
		stageCancel[st]()
		if !waitTimeout(stageDone[st], s.timeout) {
			allStopped = false
			s.logger.Error("shutdown: stage did not stop in time; continuing", "stage", st, "timeout", s.timeout)
		}
		for _, c := range s.closers {
			if c.stage == st {
				c.close()
			}
		}
		s.logger.Info("shutdown: stage stopped", "stage", st, "took", time.Since(start).Round(time.Millisecond))
	}
	// Components that overran their stage's timeout are not waited for again: the process is
	// about to exit, and the durability chain never depends on a component finishing.
	if allStopped {
		_ = g.Wait()
	}
	if firstErr != nil && !errors.Is(firstErr, context.Canceled) {
		return firstErr
	}
	return nil
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
