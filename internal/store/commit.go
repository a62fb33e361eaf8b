package store

import (
	"context"
	"sync"
)

// Commit hooks let code that runs inside a caller's transaction act on in-memory state only once
// that transaction has committed: an in-memory mirror of rows must not learn of rows that a
// rollback then removes. A backend's InTx opens a hook list with BeginCommitHooks, passes the
// returned context to fn, and calls Run after a successful commit (never after a rollback).

type commitHooksKey struct{}

// CommitHooks are the functions registered with OnCommit inside one transaction.
type CommitHooks struct {
	mu  sync.Mutex
	fns []func()
}

// BeginCommitHooks returns ctx carrying a new hook list, for a backend's InTx.
func BeginCommitHooks(ctx context.Context) (context.Context, *CommitHooks) {
	h := &CommitHooks{}
	return context.WithValue(ctx, commitHooksKey{}, h), h
}

// Run calls the registered functions in registration order; a backend calls it after commit.
func (h *CommitHooks) Run() {
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// OnCommit runs fn once the transaction of ctx has committed. Outside a transaction (ctx from
// no InTx) every write has already committed, so fn runs at once.
func OnCommit(ctx context.Context, fn func()) {
	h, ok := ctx.Value(commitHooksKey{}).(*CommitHooks)
	if !ok {
		fn()
		return
	}
	h.mu.Lock()
	h.fns = append(h.fns, fn)
	h.mu.Unlock()
}
