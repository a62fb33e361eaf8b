package opqueue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// Errors returned by Add.
var (
	// ErrPushback: the queue is over its backlog limit; the caller should retry later (503).
	ErrPushback = errors.New("operation queue is full")
	// ErrUnavailable: the operation could not be stored; it was not accepted (503).
	ErrUnavailable = errors.New("operation queue unavailable")
	// ErrClosed: the queue has stopped taking operations.
	ErrClosed = errors.New("operation queue closed")
)

// OpIDOf returns the id of an operation: the base64url SHA-256 of its canonical request. Two
// submissions of the same operation are the same operation, wherever and however often they are
// queued; that is what lets a duplicate be recognised after the first copy was anchored.
func OpIDOf(request []byte) string {
	sum := sha256.Sum256(request)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// NewOp is an operation to queue.
type NewOp struct {
	// OpID identifies the operation; empty means OpIDOf(Request).
	OpID    string
	Suffix  string
	Type    string
	Request []byte
	// Parsed is the operation as intake validated it, kept in memory so the batch writer need
	// not parse (and verify) it again; it is not stored.
	Parsed *sidetree.Operation
	// Attempts and History carry a reposted operation's failures (cluster mode).
	Attempts int
	History  []string
}

// Op is a queued operation.
type Op struct {
	ID          int64
	OpID        string
	Suffix      string
	Type        string
	Request     []byte
	Attempts    int
	History     []string
	EnqueuedAt  time.Time
	AvailableAt time.Time
	// Parsed is set for operations added by this process (nil after a restart).
	Parsed *sidetree.Operation
}

type addReq struct {
	op      store.OpQueueInsertParams
	parsed  *sidetree.Operation
	restore bool // delivered by the broker (Take), not accepted here (Add)
	at      time.Time
	done    chan error
}

// Queue is the operation queue of one instance: durable rows plus their in-memory mirror, which
// the batch writer takes batches from.
type Queue struct {
	cfg Config
	st  store.Store
	m   *metrics
	// Cluster mode (NewCluster) sets the three below; an embedded queue has none of them.
	//
	// fenced makes Ack (and parking) also require this instance's op-queue task entry, in the
	// same transaction: once the op-queue monitor has taken the instance over, its late Ack
	// fails instead of anchoring operations that were reposted.
	fenced bool
	// dedup records every anchored operation (anchored_ops) in the anchor's transaction and
	// drops already anchored copies before batching: a message can be delivered twice.
	// Embedded, intake's checks already refuse a second copy.
	dedup bool
	// repostFunc publishes operations to the operation topic for any instance to take: what
	// the instance still holds when it stops (Broker.GiveBack).
	repostFunc func(ctx context.Context, ops []Op, delay time.Duration) error

	addCh   chan addReq
	stopped chan struct{} // closed when Run has returned
	once    sync.Once

	mu      sync.Mutex
	pending []*Op              // by id: the order operations were committed in
	inBatch map[int64]struct{} // ids of operations removed into a Batch, not yet settled
	held    map[int64]struct{} // ids in pending or inBatch: changed only by adopt and settle
	maxSeen int64              // highest row id the queue has held
	syncs   int
	// syncing counts Syncs between their read and their adopt; meanwhile settle records the
	// ids it forgets in settledInSync, because the read may have returned those rows just
	// before their batch committed, and adopting them again would queue them a second time.
	syncing       int
	settledInSync map[int64]struct{}
	// afterSyncRead, tests only, runs between a Sync's read and its adopt.
	afterSyncRead func()
	notify        chan struct{}
	// The batch writer asks for Status at every commit; these two let it answer without walking
	// pending while no operation is backing off. They are bounds kept as pending changes:
	// lastAvailable is the latest AvailableAt in pending, oldestEnqueued the earliest EnqueuedAt.
	lastAvailable  time.Time
	oldestEnqueued time.Time
}

// New builds the queue of an embedded instance over st. Call Load before serving, and run Run.
func New(cfg Config, st store.Store) (*Queue, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue{
		cfg:     cfg,
		st:      st,
		addCh:   make(chan addReq, 4*cfg.MaxCommit),
		stopped: make(chan struct{}),
		notify:  make(chan struct{}, 1),
		inBatch: make(map[int64]struct{}),
		held:    make(map[int64]struct{}),

		settledInSync: make(map[int64]struct{}),
	}
	m, err := newMetrics(cfg.Registerer, q)
	if err != nil {
		return nil, err
	}
	q.m = m
	return q, nil
}

// Load reads this instance's queued rows into memory (after a restart they are all still
// there) and returns their DIDs and operation ids, in queue order.
func (q *Queue) Load(ctx context.Context) ([]store.DIDPendingKey, error) {
	rows, err := q.listAfter(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("load operation queue: %w", err)
	}
	q.adopt(rows)
	keys := make([]store.DIDPendingKey, len(rows))
	for i, op := range rows {
		keys[i] = store.DIDPendingKey{Suffix: op.Suffix, OpID: op.OpID}
	}
	q.cfg.Logger.InfoContext(ctx, "operation queue loaded", "operations", len(keys))
	return keys, nil
}

// listAfter reads every row of this instance with an id above after, in id order.
func (q *Queue) listAfter(ctx context.Context, after int64) ([]*Op, error) {
	var out []*Op
	for {
		rows, err := q.st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: q.cfg.InstanceID, AfterID: after, Limit: 5000})
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return out, nil
		}
		for _, r := range rows {
			out = append(out, fromRow(r))
		}
		after = rows[len(rows)-1].ID
	}
}

// adopt is the one place the in-memory mirror learns of committed rows: it adds the operations
// whose row id it does not hold yet (neither queued nor in a batch), keeps the queue in id order
// (the order of acceptance), and wakes the batch writer. An upsert that found an existing row
// returns that row's id, so a second copy of a queued operation is never held twice. It
// returns how many operations were new.
func (q *Queue) adopt(ops []*Op) int {
	if len(ops) == 0 {
		return 0
	}
	q.mu.Lock()
	n := 0
	ordered := true
	for _, op := range ops {
		if _, dup := q.held[op.ID]; dup {
			continue
		}
		if _, gone := q.settledInSync[op.ID]; gone {
			continue
		}
		q.held[op.ID] = struct{}{}
		if k := len(q.pending); k > 0 && q.pending[k-1].ID > op.ID {
			ordered = false
		}
		q.pending = append(q.pending, op)
		q.summarise(op)
		q.maxSeen = max(q.maxSeen, op.ID)
		n++
	}
	if !ordered {
		sort.SliceStable(q.pending, func(i, j int) bool { return q.pending[i].ID < q.pending[j].ID })
	}
	q.mu.Unlock()
	if n > 0 {
		q.signal()
	}
	return n
}

func fromRow(r store.QueuedOp) *Op {
	return &Op{
		ID: r.ID, OpID: r.OpID, Suffix: r.Suffix, Type: r.Type, Request: r.Request,
		Attempts: r.Attempts, History: r.History, EnqueuedAt: r.EnqueuedAt, AvailableAt: r.AvailableAt,
	}
}

func (q *Queue) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// Notify returns a channel that receives after operations became available. It has one reader
// (the batch writer).
func (q *Queue) Notify() <-chan struct{} { return q.notify }

// Len returns the number of queued operations that are not in a batch, including those waiting
// out a backoff.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Backlog returns every operation not yet anchored: queued and in flight.
func (q *Queue) Backlog() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) + len(q.inBatch)
}

// Status summarises what the batch writer needs to decide when to cut.
type Status struct {
	// Available is the number of operations that can go into a batch now.
	Available int
	// Oldest is when the oldest available operation was queued (zero if none).
	Oldest time.Time
	// NextAvailable is the earliest end of a backoff (zero if none is backing off).
	NextAvailable time.Time
}

// Status returns the queue's state at now.
func (q *Queue) Status(now time.Time) Status {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return Status{}
	}
	if !now.Before(q.lastAvailable) {
		return Status{Available: len(q.pending), Oldest: q.oldestEnqueued}
	}
	return q.walkStatus(now)
}

// walkStatus is Status found by walking pending, what the bounds stand in for while nothing backs
// off. Callers hold mu.
func (q *Queue) walkStatus(now time.Time) Status {
	var s Status
	for _, op := range q.pending {
		if op.AvailableAt.After(now) {
			if s.NextAvailable.IsZero() || op.AvailableAt.Before(s.NextAvailable) {
				s.NextAvailable = op.AvailableAt
			}
			continue
		}
		s.Available++
		if s.Oldest.IsZero() || op.EnqueuedAt.Before(s.Oldest) {
			s.Oldest = op.EnqueuedAt
		}
	}
	return s
}

// Peek returns up to n operations that Remove would return now, without removing them.
func (q *Queue) Peek(n int) []Op {
	q.mu.Lock()
	defer q.mu.Unlock()
	picked := q.pick(n, q.cfg.NowFunc())
	out := make([]Op, len(picked))
	for i, idx := range picked {
		out[i] = *q.pending[idx]
	}
	return out
}

// pick returns the indexes of up to n available operations in queue order, at most one per DID
// (a second operation for a DID waits for the next batch). Callers hold mu.
func (q *Queue) pick(n int, now time.Time) []int {
	var out []int
	seen := make(map[string]struct{}, min(n, len(q.pending)))
	for i, op := range q.pending {
		if len(out) >= n {
			break
		}
		if op.AvailableAt.After(now) {
			continue
		}
		if _, dup := seen[op.Suffix]; dup {
			continue
		}
		seen[op.Suffix] = struct{}{}
		out = append(out, i)
	}
	return out
}

// Remove takes up to n available operations (one per DID) out of the queue into a Batch. It
// returns nil when none is available.
func (q *Queue) Remove(n int) *Batch {
	q.mu.Lock()
	defer q.mu.Unlock()
	idx := q.pick(n, q.cfg.NowFunc())
	if len(idx) == 0 {
		return nil
	}
	b := &Batch{q: q, ops: make([]*Op, len(idx))}
	take := make(map[int]bool, len(idx))
	for i, k := range idx {
		b.ops[i] = q.pending[k]
		take[k] = true
	}
	rest := q.pending[:0]
	q.lastAvailable, q.oldestEnqueued = time.Time{}, time.Time{}
	for i, op := range q.pending {
		if !take[i] {
			rest = append(rest, op)
			q.summarise(op)
		}
	}
	clear(q.pending[len(rest):])
	q.pending = rest
	for _, op := range b.ops {
		q.inBatch[op.ID] = struct{}{}
	}
	return b
}

// putBack returns operations to the queue in id order and wakes the batch writer.
func (q *Queue) putBack(ops []*Op) {
	if len(ops) == 0 {
		return
	}
	q.mu.Lock()
	q.pending = append(q.pending, ops...)
	for _, op := range ops {
		q.summarise(op)
	}
	sort.SliceStable(q.pending, func(i, j int) bool { return q.pending[i].ID < q.pending[j].ID })
	for _, op := range ops {
		delete(q.inBatch, op.ID)
	}
	q.mu.Unlock()
	q.signal()
}

// Drain moves every queued operation that is not in a batch into flight, for giving them back
// at shutdown; the caller reposts them, which settles them.
func (q *Queue) Drain() []*Op {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := slices.Clone(q.pending)
	for _, op := range out {
		q.inBatch[op.ID] = struct{}{}
	}
	clear(q.pending)
	q.pending = q.pending[:0]
	q.lastAvailable, q.oldestEnqueued = time.Time{}, time.Time{}
	return out
}

// summarise widens Status's bounds to cover op, just added to pending. Callers hold mu.
func (q *Queue) summarise(op *Op) {
	if op.AvailableAt.After(q.lastAvailable) {
		q.lastAvailable = op.AvailableAt
	}
	if q.oldestEnqueued.IsZero() || op.EnqueuedAt.Before(q.oldestEnqueued) {
		q.oldestEnqueued = op.EnqueuedAt
	}
}

// InstanceID returns the owner of the queue's rows.
func (q *Queue) InstanceID() string { return q.cfg.InstanceID }

// settle forgets operations that left a Batch for good (anchored, parked, reposted, lost).
func (q *Queue) settle(ids ...int64) {
	q.mu.Lock()
	for _, id := range ids {
		delete(q.inBatch, id)
		delete(q.held, id)
		if q.syncing > 0 {
			q.settledInSync[id] = struct{}{}
		}
	}
	q.mu.Unlock()
}

func idsOf(ops []*Op) []int64 {
	out := make([]int64, len(ops))
	for i, op := range ops {
		out[i] = op.ID
	}
	return out
}
