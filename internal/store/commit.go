package store

import (
	"context"
	"sync"
)

// Commit hooks let code that runs inside a caller's transaction act on in-memory state only once
// that transaction has committed: an in-memory mirror of rows must not learn of rows that a
// rollback then removes. A backend's InTx opens a hook list with BeginCommitHooks, passes the
// returned context to fn, and calls Run after a successful commit (never after a rollback); a
// backend whose commit is seen by other connections before it is durable (sqlitestore syncs its
// WAL after the commit) calls RunVisible in between.

type commitHooksKey struct{}

// CommitHooks are the functions registered with OnVisible and OnCommit inside one transaction.
type CommitHooks struct {
	mu      sync.Mutex
	visible []func()
	fns     []func()
}

// BeginCommitHooks returns ctx carrying a new hook list, for a backend's InTx.
func BeginCommitHooks(ctx context.Context) (context.Context, *CommitHooks) {
	h := &CommitHooks{}
	return context.WithValue(ctx, commitHooksKey{}, h), h
}

// RunVisible calls the functions registered with OnVisible, in registration order; a backend
// calls it once other connections see the commit.
func (h *CommitHooks) RunVisible() {
	h.mu.Lock()
	fns := h.visible
	h.visible = nil
	h.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Run calls the functions registered with OnVisible that RunVisible has not called, then those
// registered with OnCommit, each in registration order; a backend calls it once the commit is
// durable.
func (h *CommitHooks) Run() {
	h.RunVisible()
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

// OnVisible runs fn once the transaction of ctx has committed and other connections see its
// writes, which may be before they are durable (sqlitestore syncs its WAL after the commit; a
// loss of power in between undoes the transaction): for in-memory state that must not lag behind
// what readers see. A later transaction that commits durably makes this one durable too. Outside
// a transaction fn runs at once.
func OnVisible(ctx context.Context, fn func()) {
	h, ok := ctx.Value(commitHooksKey{}).(*CommitHooks)
	if !ok {
		fn()
		return
	}
	h.mu.Lock()
	h.visible = append(h.visible, fn)
	h.mu.Unlock()
}
