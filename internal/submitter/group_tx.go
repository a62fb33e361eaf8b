package submitter

import (
	"context"
	"errors"
	"sync"

	"github.com/anchord/anchord/internal/store"
)

// groupTx runs the small writes of concurrent callers together, one transaction per group, so
// that n outcomes cost one commit (one fsync) instead of n. The first caller that finds no
// group in flight becomes the flusher: it writes everything queued, then whatever was queued
// meanwhile, until the queue is empty; the others wait for their own write. No goroutine is
// started.
//
// A write function MUST return store.ErrLeaseLost or store.ErrNotFound only when it wrote
// nothing (a fenced or compare-and-set statement that matched no row): such a "soft" error
// fails that write alone and leaves the group's transaction usable. Any other error rolls the
// group back, and each of its writes is then run again in a transaction of its own, so one bad
// write cannot fail the others.
type groupTx struct {
	st store.Store

	mu    sync.Mutex
	queue []*groupWrite
	busy  bool
}

type groupWrite struct {
	fn   func(ctx context.Context, tx store.Executor) error
	err  error
	done chan struct{}
}

// Do runs fn in a group transaction and returns its error. The write runs to the end even when
// ctx is cancelled (bounded by writeTimeout), like every outcome write of the submitter.
func (g *groupTx) Do(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	w := &groupWrite{fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.busy {
		g.mu.Unlock()
		<-w.done
		return w.err
	}
	g.busy = true
	for len(g.queue) > 0 {
		group := g.queue
		g.queue = nil
		g.mu.Unlock()
		g.flush(ctx, group)
		g.mu.Lock()
	}
	g.busy = false
	g.mu.Unlock()
	return w.err
}

func (g *groupTx) flush(ctx context.Context, group []*groupWrite) {
	wctx, cancel := writeContext(ctx)
	defer cancel()
	err := g.st.InTx(wctx, func(ctx context.Context, tx store.Executor) error {
		for _, w := range group {
			w.err = w.fn(ctx, tx)
			if w.err != nil && !softError(w.err) {
				return w.err
			}
		}
		return nil
	})
	if err != nil {
		if len(group) == 1 {
			group[0].err = err
		} else {
			for _, w := range group {
				w.err = g.st.InTx(wctx, w.fn)
			}
		}
	}
	for _, w := range group {
		close(w.done)
	}
}

func softError(err error) bool {
	return errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrNotFound)
}
