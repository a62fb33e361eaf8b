package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// Defaults of Config.
const (
	// MaxOperationCountDefault is MAX_OPERATION_COUNT.
	MaxOperationCountDefault = batchfile.MaxOperationsDefault
	// TimeoutDefault is batch-writer-timeout: the age of the oldest operation that forces a cut.
	TimeoutDefault = 2 * time.Second
	// FlushTimeoutDefault bounds the final flush at shutdown.
	FlushTimeoutDefault = 3 * time.Second
)

// Queue is what the writer needs of the operation queue.
type Queue interface {
	Status(now time.Time) opqueue.Status
	Remove(n int) *opqueue.Batch
	Notify() <-chan struct{}
}

// CAS stores batch files under the addresses the builder gave them.
type CAS interface {
	Address(data []byte) string
	PutAddressed(ctx context.Context, cid string, data []byte) error
}

// txCAS is a CAS kept in the database: the files can then be written in the anchor's own
// transaction, one commit for files, anchor and Ack.
type txCAS interface {
	PutAddressedTx(ctx context.Context, tx store.Executor, cid string, data []byte) error
}

// Config configures a Writer.
type Config struct {
	MaxOperationCount int
	Timeout           time.Duration
	FlushTimeout      time.Duration
	Profile           sidetree.Profile
	Limits            batchfile.Limits
	// AnchoredFunc, if set, is called after each anchor commits with the batch's operations as
	// built (the observer's Handoff, or an announcement to other instances).
	AnchoredFunc func(a store.Anchor, ops []sidetree.AnchoredOperation)
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
}

// Writer is the batch writer loop.
type Writer struct {
	cfg     Config
	q       Queue
	cas     CAS
	anchors *anchor.Writer
	st      store.Store
	m       *metrics
	signal  testsignal.Signal[Result]
}

// New returns a Writer.
func New(cfg Config, q Queue, cas CAS, anchors *anchor.Writer, st store.Store) (*Writer, error) {
	if cfg.MaxOperationCount <= 0 {
		cfg.MaxOperationCount = MaxOperationCountDefault
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = TimeoutDefault
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = FlushTimeoutDefault
	}
	if cfg.Limits.MaxOperations == 0 || cfg.Limits.MaxOperations > cfg.MaxOperationCount {
		cfg.Limits.MaxOperations = cfg.MaxOperationCount
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
	return &Writer{cfg: cfg, q: q, cas: cas, anchors: anchors, st: st, m: m}, nil
}

// Result describes one runOnce.
type Result struct {
	// Anchor is the recorded anchor; zero when nothing was cut or the batch failed.
	Anchor store.Anchor
	// Operations is the number of operations anchored.
	Operations int
	// Reason is why the batch was cut: "size", "age" or "flush".
	Reason string
}

// Run cuts and anchors batches until ctx is done, then flushes what is available and returns.
func (w *Writer) Run(ctx context.Context) error {
	failures := 0
	for {
		now := time.Now()
		st := w.q.Status(now)
		reason := w.due(st, now)
		if reason != "" {
			if wait := w.pace(ctx); wait > 0 && !loop.Sleep(ctx, wait) {
				return w.flush(ctx)
			}
			_, err := w.runOnce(ctx, reason)
			if errors.Is(err, anchor.ErrTooEarly) {
				// Another instance anchored in this second; pace waits for the next.
				w.cfg.Logger.DebugContext(ctx, "batch cut again in the next second", "error", err)
				continue
			}
			if err != nil && ctx.Err() == nil {
				failures++
				wait := loop.Backoff(failures, 100*time.Millisecond, 2, 5*time.Second)
				w.cfg.Logger.ErrorContext(ctx, "batch failed; operations stay queued", "error", err, "retry_in", wait)
				if !loop.Sleep(ctx, wait) {
					return w.flush(ctx)
				}
				continue
			}
			failures = 0
			if ctx.Err() == nil {
				continue
			}
		}
		wait := w.wait(st, now)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return w.flush(ctx)
		case <-w.q.Notify():
		case <-t.C:
		}
		t.Stop()
	}
}

// due returns why a batch must be cut now, or "".
func (w *Writer) due(st opqueue.Status, now time.Time) string {
	switch {
	case st.Available >= w.cfg.MaxOperationCount:
		return "size"
	case st.Available > 0 && now.Sub(st.Oldest) >= w.cfg.Timeout:
		return "age"
	}
	return ""
}

// wait returns how long nothing can become due without a notification: until the oldest
// available operation reaches the timeout, or a backoff ends.
func (w *Writer) wait(st opqueue.Status, now time.Time) time.Duration {
	wait := time.Minute
	if st.Available > 0 {
		wait = min(wait, st.Oldest.Add(w.cfg.Timeout).Sub(now))
	}
	if !st.NextAvailable.IsZero() {
		wait = min(wait, st.NextAvailable.Sub(now))
	}
	return max(wait, time.Millisecond)
}

// pace returns how long to wait before cutting a due batch: in the did:orb profile, until the
// second after the domain's latest anchor (anchor.Writer.Wait), so that the anchor can take the
// present time. Operations that arrive meanwhile join the batch.
func (w *Writer) pace(ctx context.Context) time.Duration {
	wait, err := w.anchors.Wait(ctx, w.st)
	if err != nil {
		// The batch's own transaction meets the same database and reports it.
		return 0
	}
	if wait > 0 {
		w.m.paced.Observe(wait.Seconds())
	}
	return wait
}

// flush anchors everything available before the writer exits, within FlushTimeout, on a
// context that outlives ctx. Whatever cannot be anchored in time stays queued.
func (w *Writer) flush(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.FlushTimeout)
	defer cancel()
	for fctx.Err() == nil {
		if w.q.Status(time.Now()).Available == 0 {
			return nil
		}
		if wait := w.pace(fctx); wait > 0 && !loop.Sleep(fctx, wait) {
			break
		}
		_, err := w.runOnce(fctx, "flush")
		if errors.Is(err, anchor.ErrTooEarly) {
			continue
		}
		if err != nil {
			w.cfg.Logger.WarnContext(fctx, "flush at shutdown incomplete; operations stay queued", "error", err)
			return nil
		}
	}
	return nil
}

// runOnce cuts, builds, stores and anchors one batch.
func (w *Writer) runOnce(ctx context.Context, reason string) (Result, error) {
	start := time.Now()
	b := w.q.Remove(w.cfg.MaxOperationCount)
	if b == nil {
		return Result{}, nil
	}
	if _, err := b.DropAnchored(ctx); err != nil {
		b.Nack(ctx, err)
		return Result{}, err
	}
	if b.Len() == 0 {
		return Result{}, nil
	}
	ops, err := w.parse(ctx, b)
	if err != nil {
		b.Nack(ctx, err)
		return Result{}, err
	}
	if len(ops) == 0 {
		return Result{}, nil
	}
	files, err := w.build(b, ops)
	if err == nil {
		err = failpoint.Err(failpoint.BatchFail)
	}
	if err != nil {
		b.Nack(ctx, err)
		return Result{}, err
	}
	inTx, filesInTx := w.cas.(txCAS)
	if !filesInTx {
		for _, f := range files.List() {
			if err := w.cas.PutAddressed(ctx, f.URI, f.Data); err != nil {
				err = fmt.Errorf("store %s: %w", f.Kind, err)
				b.Nack(ctx, err)
				return Result{}, err
			}
		}
	}
	failpoint.Hit(failpoint.BatchAfterCAS)
	req := anchor.Request{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, CoreIndex: files.CoreIndex.Data, OpCount: b.Len()}
	for _, op := range b.Ops() {
		req.Ops = append(req.Ops, anchor.OpRef{Suffix: op.Suffix, Type: op.Type})
	}
	var a store.Anchor
	err = w.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if filesInTx {
			for _, f := range files.List() {
				if err := inTx.PutAddressedTx(ctx, tx, f.URI, f.Data); err != nil {
					return fmt.Errorf("store %s: %w", f.Kind, err)
				}
			}
		}
		var err error
		if a, err = w.anchors.Write(ctx, tx, req); err != nil {
			return err
		}
		if err := b.Ack(ctx, tx, a.Seq); err != nil {
			return err
		}
		failpoint.Hit(failpoint.BatchBeforeCommit)
		return nil
	})
	if err != nil {
		err = fmt.Errorf("anchor batch of %d: %w", b.Len(), err)
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			// Some rows are no longer ours (parked as expired, taken by another instance): drop
			// those and queue the rest again untouched. If the whole instance was taken over,
			// its heartbeat stops it.
			if _, rerr := b.Reconcile(ctx); rerr != nil {
				b.Nack(ctx, err)
				return Result{}, err
			}
			b.Return(0)
		case errors.Is(err, store.ErrConflict):
			// Another copy of an operation was anchored meanwhile; the next cut drops it.
			b.Return(0)
		case errors.Is(err, anchor.ErrTooEarly):
			// Not the operations' fault: they are cut again in the next second.
			b.Return(0)
		default:
			b.Nack(ctx, err)
		}
		return Result{}, err
	}
	failpoint.Hit(failpoint.BatchAfterCommit)
	n := b.Len()
	b.Committed()
	w.m.batches.WithLabelValues(reason).Inc()
	w.m.size.Observe(float64(n))
	w.m.duration.Observe(time.Since(start).Seconds())
	for _, f := range files.List() {
		w.m.fileBytes.WithLabelValues(string(f.Kind)).Observe(float64(len(f.Data)))
	}
	w.cfg.Logger.InfoContext(ctx, "batch anchored", "anchor", a.AnchorString, "seq", a.Seq, "operations", n,
		"reason", reason, "status", a.Status, "took", time.Since(start).Round(time.Millisecond))
	if w.cfg.AnchoredFunc != nil {
		w.cfg.AnchoredFunc(a, files.Operations)
	}
	res := Result{Anchor: a, Operations: n, Reason: reason}
	w.signal.Signal(res)
	return res, nil
}

// parse returns the batch's operations parsed. Operations validated at intake keep their parse;
// after a restart they are parsed again. One that no longer parses (a profile change) is parked:
// no retry can fix it.
func (w *Writer) parse(ctx context.Context, b *opqueue.Batch) ([]*sidetree.Operation, error) {
	var ops []*sidetree.Operation
	for _, op := range b.Ops() {
		parsed := op.Parsed
		if parsed == nil {
			p, err := sidetree.ParseOperation(op.Request, w.cfg.Profile)
			if err != nil {
				if perr := b.Park(ctx, op.OpID, "invalid operation: "+err.Error()); perr != nil {
					return nil, perr
				}
				continue
			}
			parsed = p
		}
		ops = append(ops, parsed)
	}
	return ops, nil
}

// build builds the batch files, cutting the batch smaller (and returning the rest to the queue)
// when a file would exceed its cap.
func (w *Writer) build(b *opqueue.Batch, ops []*sidetree.Operation) (*batchfile.Files, error) {
	for {
		files, err := batchfile.Build(ops, w.cas.Address, w.cfg.Limits)
		var capErr *batchfile.CapacityError
		if errors.As(err, &capErr) && capErr.Fit > 0 && capErr.Fit < len(ops) {
			w.m.shrunk.WithLabelValues(string(capErr.Kind)).Inc()
			w.cfg.Logger.Info("batch over a file cap; cutting smaller", "file", capErr.Kind, "size", capErr.Size,
				"limit", capErr.Limit, "operations", len(ops), "fit", capErr.Fit)
			b.Return(capErr.Fit)
			ops = ops[:capErr.Fit]
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("build batch files: %w", err)
		}
		return files, nil
	}
}
