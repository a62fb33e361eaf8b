package observer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// presenceTimeout bounds one round's query. The round runs for every request in it, not only
// for the one whose goroutine runs it, so it does not end with that request's context.
const presenceTimeout = 10 * time.Second

// presence answers "does the per-DID index hold any operation of this suffix?" for concurrent
// callers with one query per round instead of one per caller: a caller that arrives while a
// round's query is in flight waits for the next round, which takes everyone who waited, and one
// of them runs it.
//
// The answer is as exact as a read of its own: every round's query starts after each of its
// requests arrived, so an operation indexed before a request arrived is always seen. That is
// what a cluster needs, where any instance's observer may index a DID: a filter fed by
// announcements would know of another instance's commit only some time after it, and could not
// tell a request that arrived in between. The cost of exactness is one query per round, not
// per request.
//
// No goroutine is started: the caller that finds no round in flight runs one, and a finished
// round hands the next to the first request that waited for it.
type presence struct {
	st store.Executor

	mu      sync.Mutex
	next    []*presenceReq // waiting for the next round
	running bool           // a round is in flight or about to start
}

type presenceReq struct {
	suffix string
	found  bool
	err    error
	done   chan struct{} // closed once found and err are set
	lead   chan struct{} // closed when this request is to run the next round
}

// has reports whether suffix has an operation in the per-DID index.
//
// A caller waits for at most its round and the one in flight before it, each bounded by
// presenceTimeout, whatever its context says: a waiter that left could be the one the next
// round is handed to.
func (p *presence) has(ctx context.Context, suffix string) (bool, error) {
	req := &presenceReq{suffix: suffix, done: make(chan struct{}), lead: make(chan struct{})}
	p.mu.Lock()
	p.next = append(p.next, req)
	lead := !p.running
	p.running = true
	p.mu.Unlock()
	if !lead {
		select {
		case <-req.done:
			return req.found, req.err
		case <-req.lead:
		}
	}
	p.round(ctx)
	<-req.done // the round just run included req: it was waiting when the round took them
	return req.found, req.err
}

// round queries for every waiting request, answers them, and hands the next round to the first
// request that arrived meanwhile (or ends the turn when there is none). The answers and the
// hand-over are deferred: a query that panics (the HTTP server recovers it into one 500) fails
// its round's other requests instead of leaving them, and every later one, waiting forever.
func (p *presence) round(ctx context.Context) {
	p.mu.Lock()
	batch := p.next
	p.next = nil
	p.mu.Unlock()

	var last map[string]int64
	err := errPresencePanicked
	defer func() {
		for _, r := range batch {
			_, r.found = last[r.suffix]
			r.err = err
			close(r.done)
		}
		p.mu.Lock()
		if len(p.next) > 0 {
			close(p.next[0].lead)
		} else {
			p.running = false
		}
		p.mu.Unlock()
	}()

	suffixes := make([]string, len(batch))
	for i, r := range batch {
		suffixes[i] = r.suffix
	}
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), presenceTimeout)
	defer cancel()
	last, err = p.st.DIDLastAnchors(qctx, suffixes)
	if err != nil {
		last = nil
		err = fmt.Errorf("look up %d DIDs in the index: %w", len(suffixes), err)
	}
}

// errPresencePanicked answers the requests of a round whose query panicked.
var errPresencePanicked = errors.New("look up DIDs in the index: the query panicked")
