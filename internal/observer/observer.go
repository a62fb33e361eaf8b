package observer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// PollIntervalDefault is how often the Observer looks for completed anchors without being told:
// anchors completed by another instance or by a ledger's status poller arrive this way.
const PollIntervalDefault = time.Second

// FetchFunc reads CAS content (cas.Store.FetchFunc).
type FetchFunc func(ctx context.Context) func(uri string, maxSize int) ([]byte, error)

// IndexTxRowsOneWriter is Config.IndexTxRows for a store with one write connection (SQLite). At
// 1,500,000 DIDs and 4,000 creates/s, one transaction per anchor held the write connection ~290
// ms and POST p99 was ~290 ms; in slices (with the background checkpoint) p99 per 10 s was
// 50-97 ms at 1,000 rows, 39-70 at 600, 41-87 at 400. Smaller slices cost more: on a small index
// consecutive slices dirty the same pages again, and a 10,000-create batch at 200,000 DIDs took
// 181 ms of CPU in one transaction, 196 in slices of 1,000, 247 in slices of 400. So the slice
// shrinks as the index grows (sliceRows).
const IndexTxRowsOneWriter = 1000

// The slice of a large index: from largeIndexRows rows on, a slice holds at most
// IndexTxRowsLargeIndex. A slice dirties about one suffix-index page per row, and the larger the
// index the colder and costlier those pages; the small index's re-dirtied pages, which made small
// slices dear, are spread over too many pages there to be hit twice. The step lies between the
// two sizes measured (200,000 rows, where 1,000 is the cheaper slice, and 1,500,000, where 400
// gives the lower tail).
const (
	IndexTxRowsLargeIndex = 400
	largeIndexRows        = 1_000_000
)

// sliceRows is the rows per index transaction, for the configured bound (0: one transaction) and
// an index of indexRows rows.
func sliceRows(configured, indexRows int) int {
	if configured > IndexTxRowsLargeIndex && indexRows >= largeIndexRows {
		return IndexTxRowsLargeIndex
	}
	return configured
}

// Config configures an Observer.
type Config struct {
	Profile      sidetree.Profile
	Limits       batchfile.Limits
	PollInterval time.Duration
	// ReleaseFunc, if set, is told the operations of every observed anchor once their index
	// rows are committed, as soon as other connections see them (each slice's as it commits,
	// IndexTxRows; store.OnVisible): they are no longer pending (intake.Pending.ReleaseIndexed).
	// Never before the commit: a DID released earlier could take an operation checked against
	// the state without them. Not later either: a client that resolves the DID's new state may
	// send its next operation at once.
	ReleaseFunc func(ops []store.DIDOperation)
	// CommittingFunc, if set, is told of an anchor's operations before their first index rows
	// are written; the func it returns is called once the outcome is decided, after ReleaseFunc
	// when the rows committed (intake.Pending.Committing: between the commit and ReleaseFunc a
	// resolution already shows an operation whose DID is still reserved).
	CommittingFunc func(ops []store.DIDOperation) (done func())
	// Known, if set, learns every suffix indexed, before its transaction commits. Setting it
	// declares this Observer the only writer of the per-DID index (embedded mode).
	Known *Known
	// Resolver, if set, is told of every suffix indexed, before and after the commit. With
	// Known also set it then trusts its cached states without reading the index.
	Resolver *Resolver
	// ReleaseTxFunc, if set, runs in the transaction that indexes an anchor's operations: the
	// cluster's DID reservations end there (intake.SharedPending.ReleaseTx).
	ReleaseTxFunc func(ctx context.Context, tx store.Executor, ops []store.DIDOperation) error
	// IndexedFunc, if set, is told of every anchor this Observer indexed, after the commit
	// (the federation's publisher waits for that).
	IndexedFunc func(Result)
	// IndexTxRows, when positive, bounds the index rows written per transaction (with Known
	// set, fewer once the index is large: sliceRows): a larger anchor
	// is indexed in several transactions, the last of which also marks it observed. On SQLite
	// every commit of the process waits while an index transaction holds the one write
	// connection, and its time grows with the index (one random suffix-index page per row); in
	// slices, intake's commits go between them. Rows are keyed by (anchor, position) and their
	// insert ignores a row already there, so an anchor whose last transaction did not commit is
	// indexed again from the start without duplicates. Until it is marked observed, readers may
	// see some of its operations and not others: each is visible only once committed, and
	// each DID has at most one operation per anchor.
	IndexTxRows int
	// Batches rebuilds the requests of index rows (which the index does not keep) where a DID's
	// state is computed from its history. Unset, the Observer reads batches through its fetch
	// with Limits for every anchor, and gives them to Resolver if it has none.
	Batches *Batches
	// Announcer, if set, is the cluster's pub/sub: Anchored announces each completed anchor on
	// the anchor topic to every instance's observer, instead of handing it to this one.
	Announcer  pubsub.Publisher
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Observer indexes completed anchors.
type Observer struct {
	cfg     Config
	st      store.Store
	fetch   FetchFunc
	batches *Batches
	m       *metrics
	wake    chan struct{}
	signal  testsignal.Signal[Result]

	mu      sync.Mutex
	handoff map[int64][]sidetree.AnchoredOperation
}

// New returns an Observer.
func New(cfg Config, st store.Store, fetch FetchFunc) (*Observer, error) {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = PollIntervalDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	batches := cfg.Batches
	if batches == nil {
		if batches, err = NewBatches(BatchesConfig{Profile: cfg.Profile, Limits: cfg.Limits, ForeignLimits: cfg.Limits, Logger: cfg.Logger}, fetch); err != nil {
			return nil, err
		}
	}
	if cfg.Resolver != nil {
		if cfg.Known != nil {
			cfg.Resolver.trustCache()
		}
		cfg.Resolver.batches.CompareAndSwap(nil, batches)
	}
	return &Observer{cfg: cfg, st: st, fetch: fetch, batches: batches, m: m, wake: make(chan struct{}, 1), handoff: map[int64][]sidetree.AnchoredOperation{}}, nil
}

// Handoff gives the observer the operations of anchor seq as the batch writer built them, so
// that it indexes them without reading the batch files back from CAS. The handoff lives in
// memory only: after a restart the observer reads the files, as it does for anchors written by
// other instances.
func (o *Observer) Handoff(seq int64, ops []sidetree.AnchoredOperation) {
	o.mu.Lock()
	o.handoff[seq] = ops
	o.mu.Unlock()
	o.Notify()
}

// handoffMax bounds the anchors whose operations a cluster instance keeps for its observer
// (keep): an anchor another instance observed is never claimed here.
const handoffMax = 4

// keep is Handoff without waking the Observer, bounded to the handoffMax latest anchors.
func (o *Observer) keep(seq int64, ops []sidetree.AnchoredOperation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handoff[seq] = ops
	for len(o.handoff) > handoffMax {
		oldest := seq
		for s := range o.handoff {
			oldest = min(oldest, s)
		}
		delete(o.handoff, oldest)
	}
}

// announceTimeout bounds the best-effort announcement of a completed anchor.
const announceTimeout = 10 * time.Second

// Anchored is the batch writer's AnchoredFunc: it tells observers that anchor a was recorded,
// with the operations the writer built. Only a completed anchor is observed (a ledger anchor
// completes later, through the status poller). Embedded, the operations are handed over
// directly; in a cluster the anchor topic tells every instance, best effort: an announcement
// that is lost is found by an observer's poll.
func (o *Observer) Anchored(a store.Anchor, ops []sidetree.AnchoredOperation) {
	if a.Status != store.AnchorCompleted {
		return
	}
	if o.cfg.Announcer == nil {
		o.Handoff(a.Seq, ops)
		return
	}
	// The announcement usually comes back to this instance's observer: it then has the
	// operations at hand instead of reading the files back from CAS. It is not woken: it would
	// race whichever observer takes the announcement.
	o.keep(a.Seq, ops)
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	if err := o.cfg.Announcer.Publish(ctx, pubsub.TopicAnchor, AnchorMessage(a.Seq)); err != nil {
		o.cfg.Logger.WarnContext(ctx, "announce anchor; observers will find it by polling", "seq", a.Seq, "error", err)
	}
}

// Notify wakes the Observer: an anchor was completed.
func (o *Observer) Notify() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Result describes one runOnce.
type Result struct {
	// Seq is the anchor observed; zero when there was none to observe.
	Seq int64
	// Operations is the number of operations indexed.
	Operations int
	// Lag is the time from the anchor's completion to its observation.
	Lag time.Duration
	// Suffixes are the DIDs of the operations indexed, in batch order (this domain's anchors
	// only; nil for another domain's).
	Suffixes []string
}

// Run observes anchors as they complete until ctx is done.
func (o *Observer) Run(ctx context.Context) error {
	failures := 0
	for {
		res, err := o.runOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			wait := loop.Backoff(failures, 100*time.Millisecond, 2, 10*time.Second)
			o.cfg.Logger.ErrorContext(ctx, "observe anchor", "error", err, "retry_in", wait)
			if !loop.Sleep(ctx, wait) {
				return nil
			}
			continue
		case res.Seq != 0:
			failures = 0
			continue // there may be more
		}
		failures = 0
		t := time.NewTimer(o.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-o.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// CatchUp observes every anchor that is complete now. The daemon calls it before serving, so
// that after a restart no DID is reported as pending-free while its anchored operation is not
// yet indexed.
func (o *Observer) CatchUp(ctx context.Context) (int, error) {
	n := 0
	for {
		res, err := o.runOnce(ctx)
		if err != nil {
			return n, err
		}
		if res.Seq == 0 {
			return n, nil
		}
		n++
	}
}

// runOnce observes the oldest completed, unobserved anchor, if any.
func (o *Observer) runOnce(ctx context.Context) (Result, error) {
	a, err := o.st.AnchorNextToObserve(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return o.observe(ctx, a)
}

// ObserveSeq observes anchor seq if it is completed and not yet observed; otherwise it does
// nothing. It is the handler of the anchor topic in cluster mode: whichever instance receives an
// anchor's message indexes it, and a message delivered twice, or racing the sweep, indexes nothing
// twice.
func (o *Observer) ObserveSeq(ctx context.Context, seq int64) (Result, error) {
	a, err := o.st.AnchorGet(ctx, seq)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	if a.Status != store.AnchorCompleted || a.ObservedAt != nil {
		return Result{}, nil
	}
	return o.observe(ctx, a)
}

func (o *Observer) observe(ctx context.Context, a store.Anchor) (Result, error) {
	if err := failpoint.Pause(ctx, failpoint.ObserverBeforeIndex); err != nil {
		return Result{}, err
	}
	start := time.Now()
	o.mu.Lock()
	handed, ok := o.handoff[a.Seq]
	o.mu.Unlock()
	if !ok {
		// The files are read, and the operations parsed, outside the write transaction: on
		// SQLite a write transaction blocks every other writer (the operation queue's commits)
		// for as long as it lasts.
		var err error
		if handed, err = o.read(ctx, a); err != nil {
			return Result{}, err
		}
	}
	states := prepareStates(o.cfg.Profile, anchored(a.Seq, a.Origin, a.IssuedAt, handed))
	ops := rows(a.Seq, states.ops)
	suffixes := make([]string, len(ops))
	for i, op := range ops {
		suffixes[i] = op.Suffix
	}
	if o.cfg.Known != nil {
		// Before the commit: a request that reads "not indexed" from the filter must never see
		// a suffix the database already has. A failed commit only leaves a false positive.
		o.cfg.Known.Add(suffixes)
	}
	if o.cfg.Resolver != nil {
		o.cfg.Resolver.Invalidate(suffixes)
	}
	if o.cfg.CommittingFunc != nil {
		defer o.cfg.CommittingFunc(ops)()
	}
	from := 0
	if n := o.sliceRows(); n > 0 {
		for len(ops)-from > n {
			if err := o.indexSlice(ctx, a.Seq, ops[from:from+n], states.slice(from, from+n)); err != nil {
				return Result{}, err
			}
			from += n
		}
	}
	last, lastStates := ops[from:], states
	if from > 0 {
		lastStates = states.slice(from, len(ops))
	}
	err := o.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		store.OnVisible(ctx, func() { o.visible(last) }) // the slices' were released as they committed
		// The mark comes first: it claims the anchor. In a cluster the sweep and the anchor
		// topic's handler (of this instance or another) may both find it unobserved; the second
		// mark waits for the first's transaction and, once that commits, fails (ErrNotFound)
		// before writing anything. Marked last, the loser would first write every state again
		// (waiting for the winner's inserts, then putting the same states back).
		if err := tx.AnchorMarkObserved(ctx, a.Seq); err != nil {
			return err
		}
		if err := tx.DIDOperationInsertMany(ctx, last); err != nil {
			return err
		}
		if _, err := o.indexStates(ctx, tx, lastStates); err != nil {
			return err
		}
		if o.cfg.ReleaseTxFunc != nil {
			if err := o.cfg.ReleaseTxFunc(ctx, tx, ops); err != nil {
				return err
			}
		}
		failpoint.Hit(failpoint.ObserverBeforeCommit)
		return nil
	})
	if o.cfg.Resolver != nil {
		o.cfg.Resolver.Invalidate(suffixes) // after the commit (or the rollback), before anyone is told
	}
	if err == nil || errors.Is(err, store.ErrNotFound) {
		o.mu.Lock()
		delete(o.handoff, a.Seq)
		o.mu.Unlock()
	}
	if errors.Is(err, store.ErrNotFound) {
		// Another observer indexed it first; our last transaction wrote nothing (earlier
		// slices' rows, if any, are the same rows it wrote). Its rows are committed, so the
		// operations are no longer pending.
		if o.cfg.ReleaseFunc != nil {
			o.cfg.ReleaseFunc(ops)
		}
		return Result{Seq: a.Seq}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("observe anchor %d: %w", a.Seq, err)
	}
	res := Result{Seq: a.Seq, Operations: len(ops), Suffixes: suffixes}
	if a.CompletedAt != nil {
		res.Lag = time.Since(*a.CompletedAt)
		o.m.lag.Observe(res.Lag.Seconds())
	}
	o.m.observed.Inc()
	o.m.operations.Add(float64(len(ops)))
	o.m.duration.Observe(time.Since(start).Seconds())
	if o.cfg.IndexedFunc != nil {
		o.cfg.IndexedFunc(res)
	}
	o.cfg.Logger.DebugContext(ctx, "anchor observed", "seq", a.Seq, "anchor", a.AnchorString, "operations", len(ops))
	o.signal.Signal(res)
	return res, nil
}

// sliceRows is the rows per index transaction now. Only the embedded observer slices (IndexTxRows
// is for one write connection), and it has the Known filter, which counts the index's rows.
func (o *Observer) sliceRows() int {
	if o.cfg.Known == nil {
		return o.cfg.IndexTxRows
	}
	return sliceRows(o.cfg.IndexTxRows, o.cfg.Known.Len())
}

// indexSlice commits some of anchor seq's index rows ahead of the transaction that marks it
// observed (Config.IndexTxRows).
func (o *Observer) indexSlice(ctx context.Context, seq int64, ops []store.DIDOperation, states stateBatch) error {
	err := o.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		store.OnVisible(ctx, func() { o.visible(ops) })
		if err := tx.DIDOperationInsertMany(ctx, ops); err != nil {
			return err
		}
		_, err := o.indexStates(ctx, tx, states)
		return err
	})
	if o.cfg.Resolver != nil {
		// As after the last transaction: a state cached from rows read before this commit goes.
		suffixes := make([]string, len(ops))
		for i, op := range ops {
			suffixes[i] = op.Suffix
		}
		o.cfg.Resolver.Invalidate(suffixes)
	}
	if err != nil {
		return fmt.Errorf("observe anchor %d: %w", seq, err)
	}
	failpoint.Hit(failpoint.ObserverAfterSlice)
	return nil
}

// visible runs once an index transaction's rows are seen by other connections (store.OnVisible),
// which on SQLite is before they are synced: a client that resolves a DID's new state then may
// send its next operation at once, and must not be told the last one is still pending. The
// resolver first forgets what it cached from rows read before the commit, so that a request
// the release lets through reads a state that holds the operation.
func (o *Observer) visible(ops []store.DIDOperation) {
	if o.cfg.Resolver != nil {
		suffixes := make([]string, len(ops))
		for i, op := range ops {
			suffixes[i] = op.Suffix
		}
		o.cfg.Resolver.Invalidate(suffixes)
	}
	if o.cfg.ReleaseFunc != nil {
		o.cfg.ReleaseFunc(ops)
	}
}

// read returns the operations of anchor a. A batch the reader rejects for good is indexed as
// empty, as every Sidetree node would ignore it; a fetch failure is returned for a retry.
func (o *Observer) read(ctx context.Context, a store.Anchor) ([]sidetree.AnchoredOperation, error) {
	b, err := batchfile.Read(o.cfg.Profile, a.AnchorString, o.fetch(ctx), o.cfg.Limits)
	var fe *batchfile.FetchError
	if errors.As(err, &fe) {
		return nil, fmt.Errorf("read anchor %d: %w", a.Seq, err)
	}
	if err != nil {
		o.m.invalid.Inc()
		o.cfg.Logger.ErrorContext(ctx, "anchored batch is invalid; its operations are ignored", "seq", a.Seq, "anchor", a.AnchorString, "error", err)
		return nil, nil
	}
	if b.ProvisionalErr != nil {
		if errors.As(b.ProvisionalErr, &fe) {
			return nil, fmt.Errorf("read anchor %d: %w", a.Seq, b.ProvisionalErr)
		}
		o.m.invalid.Inc()
		o.cfg.Logger.ErrorContext(ctx, "provisional files of an anchored batch are invalid; its updates are ignored", "seq", a.Seq, "error", b.ProvisionalErr)
	}
	return b.Operations, nil
}

// rows turns a batch's operations into index rows of anchor seq.
func rows(seq int64, ops []sidetree.AnchoredOperation) []store.DIDOperation {
	out := make([]store.DIDOperation, len(ops))
	for i, op := range ops {
		out[i] = store.DIDOperation{Suffix: op.Suffix, AnchorSeq: seq, Index: op.Position, Type: string(op.Type), Request: op.Request}
	}
	return out
}
