package submitter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// PollResult is what one status poll did. Every batch asked about is counted in exactly one
// field after Polled; batches whose scope could not be asked are counted in Errors only.
type PollResult struct {
	Polled int
	// Committed: COMMITTED; the anchor completed.
	Committed int
	// Invalid: INVALID; the anchor failed and its operations went back to the queue.
	Invalid int
	// Pending: PENDING (again).
	Pending int
	// Unknown: UNKNOWN within the grace period after submission.
	Unknown int
	// Resubmitted: UNKNOWN past the grace period, twice in a row; handed back to the
	// submitters to send the same bytes again.
	Resubmitted int
	// Conflicts: the batch or its anchor was moved by someone else meanwhile; nothing written.
	Conflicts int
	// Errors: the ledger could not be asked, or a write failed; tried again next poll.
	Errors int
}

// Poller polls the ledger for the status of submitted batches and settles their anchors. Its
// unit of work, RunOnce, is safe to run on several instances at once (every write is a
// compare-and-set), but one poller per cluster is enough: run it as a singleton task.
type Poller struct {
	cfg    PollerConfig
	st     store.Store
	client ledger.Client
	logger *slog.Logger
	m      *pollerMetrics
	// group writes the transitions of concurrent batches in shared transactions (INVALID,
	// whose RequeueFunc may fail, gets a transaction of its own).
	group *groupTx

	testSignals struct {
		poll testsignal.Signal[PollResult] // a poll of Run ended
	}
}

// NewPoller returns a Poller over the batches in st, asking client.
func NewPoller(cfg PollerConfig, st store.Store, client ledger.Client) (*Poller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if st == nil || client == nil {
		return nil, errors.New("new status poller: store and ledger client are required")
	}
	m, err := newPollerMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Poller{cfg: cfg, st: st, client: client, logger: cfg.Logger, m: m,
		group: &groupTx{st: st}}, nil
}

// Run polls every Interval (with jitter) until ctx is done, then returns nil. A failed poll
// RunTask is the poller's task-manager entry point: one poll per task interval, on one instance
// at a time. Every write of the poller is a compare-and-set on the batch's status, so a second
// poller after a take-over cannot apply an outcome twice.
func (p *Poller) RunTask(ctx context.Context, _ int64) error {
	_, err := p.RunOnce(ctx)
	return err
}

// is logged and retried with backoff. Use it when no task manager schedules RunOnce.
func (p *Poller) Run(ctx context.Context) error {
	p.logger.InfoContext(ctx, "status poller started", "config", p.cfg)
	defer p.logger.InfoContext(ctx, "status poller stopped")
	failures := 0
	wait := loop.Jitter(p.cfg.Interval, 0.5)
	for {
		if !loop.Sleep(ctx, wait) {
			return nil
		}
		res, err := p.RunOnce(ctx)
		p.testSignals.poll.Signal(res)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			wait = loop.Backoff(failures, p.cfg.Interval, 2, max(errorBackoffMax, p.cfg.Interval))
			p.logger.WarnContext(ctx, "status poll failed", "error", err, "failures", failures, "retry_in", wait)
		default:
			failures, wait = 0, loop.Jitter(p.cfg.Interval, 0.2)
		}
	}
}

// RunOnce asks the ledger about every submitted batch whose status is not final, a page at a
// time and one request per scope (service id), and acts on the answers: COMMITTED completes
// the anchor; INVALID fails it and gives its operations back to the queue; a batch UNKNOWN
// for longer than UnknownGrace after its submission is asked about once more and, still
// UNKNOWN, handed back to the submitters. It returns an error only when the database could not
// be read; ledger and per-batch failures are counted in the result.
func (p *Poller) RunOnce(ctx context.Context) (PollResult, error) {
	var res PollResult
	after := ""
	for {
		page, err := p.st.LedgerBatchListUnsettled(ctx, store.LedgerBatchListUnsettledParams{AfterID: after, Limit: p.cfg.PageSize})
		if err != nil {
			p.m.pollErrors.Inc()
			return res, fmt.Errorf("poll ledger statuses: %w", err)
		}
		if len(page) == 0 {
			break
		}
		if err := p.pollPage(ctx, page, &res); err != nil {
			p.m.pollErrors.Inc()
			return res, fmt.Errorf("poll ledger statuses: %w", err)
		}
		if len(page) < p.cfg.PageSize {
			break
		}
		after = page[len(page)-1].HeaderSignature
	}
	if counts, err := p.st.LedgerBatchCount(ctx); err == nil {
		for state, n := range map[string]int{"unsubmitted": counts.Unsubmitted, "claimed": counts.Claimed,
			"unsettled": counts.Unsettled, "committed": counts.Committed, "invalid": counts.Invalid, "failed": counts.Failed} {
			p.m.batches.WithLabelValues(state).Set(float64(n))
		}
	}
	if res.Polled > 0 || res.Errors > 0 {
		p.logger.DebugContext(ctx, "status poll", "result", res)
	}
	return res, nil
}

func (p *Poller) pollPage(ctx context.Context, page []store.LedgerBatch, res *PollResult) error {
	statuses := p.statuses(ctx, page, res)
	now, err := p.st.Now(ctx)
	if err != nil {
		return err
	}
	var lost []store.LedgerBatch
	var answered []store.LedgerBatch
	for _, b := range page {
		st, ok := statuses[b.HeaderSignature]
		if !ok {
			continue
		}
		res.Polled++
		if st.Status == ledger.StatusUnknown && b.SubmittedAt != nil && now.Sub(*b.SubmittedAt) >= p.cfg.UnknownGrace {
			lost = append(lost, b)
			continue
		}
		answered = append(answered, b)
	}
	p.applyAll(ctx, answered, statuses, res, nil)
	if len(lost) == 0 {
		return nil
	}
	// Ask once more before sending a batch again: one odd answer must not cause a resubmission.
	again := p.statuses(ctx, lost, res)
	var asked []store.LedgerBatch
	for _, b := range lost {
		if _, ok := again[b.HeaderSignature]; ok {
			asked = append(asked, b)
		} else {
			res.Polled--
		}
	}
	p.applyAll(ctx, asked, again, res, func(ctx context.Context, b store.LedgerBatch) pollOutcome {
		return p.resubmit(ctx, b, now)
	})
	return nil
}

// applyAll applies the statuses of batches: the COMMITTED ones in one bulk write, the others
// Concurrency at a time. lostFunc, when set, handles the batches that are still UNKNOWN.
func (p *Poller) applyAll(ctx context.Context, batches []store.LedgerBatch, statuses map[string]ledger.BatchStatus,
	res *PollResult, lostFunc func(context.Context, store.LedgerBatch) pollOutcome) {
	var committed, others []store.LedgerBatch
	for _, b := range batches {
		if statuses[b.HeaderSignature].Status == ledger.StatusCommitted {
			committed = append(committed, b)
		} else {
			others = append(others, b)
		}
	}
	p.commitAll(ctx, committed, res)

	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, p.cfg.Concurrency)
	for _, b := range others {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st := statuses[b.HeaderSignature]
			var o pollOutcome
			if lostFunc != nil && st.Status == ledger.StatusUnknown {
				o = lostFunc(ctx, b)
			} else {
				o = p.apply(ctx, b, st)
			}
			mu.Lock()
			res.add(o)
			mu.Unlock()
		})
	}
	wg.Wait()
}

// commitAll settles committed batches with one bulk write: each moves to COMMITTED and its
// anchor completes (the observer then indexes it).
func (p *Poller) commitAll(ctx context.Context, batches []store.LedgerBatch, res *PollResult) {
	if len(batches) == 0 {
		return
	}
	ps := make([]store.LedgerBatchCommitParams, len(batches))
	from := make(map[string]string, len(batches))
	created := make(map[string]time.Time, len(batches))
	for i, b := range batches {
		ps[i] = store.LedgerBatchCommitParams{BatchID: b.HeaderSignature, From: b.DLTStatus}
		from[b.HeaderSignature] = b.DLTStatus
		created[b.HeaderSignature] = b.Created
	}
	wctx, cancel := writeContext(ctx)
	defer cancel()
	moved, err := p.st.LedgerBatchCommitMany(wctx, ps)
	if err != nil {
		res.Errors += len(batches)
		p.logger.ErrorContext(ctx, "record committed batches", "batches", len(batches), "error", err)
		return
	}
	res.Committed += len(moved)
	res.Conflicts += len(batches) - len(moved)
	for _, c := range moved {
		p.m.transitions.WithLabelValues(from[c.BatchID], string(ledger.StatusCommitted)).Inc()
		if c.AnchorCompleted {
			p.m.anchors.WithLabelValues("completed").Inc()
			// The line an operator waits for: submission alone does not make DIDs resolvable.
			p.logger.InfoContext(ctx, "anchor committed on the ledger", "anchor_seq", c.AnchorSeq,
				"batch_id", shortID(c.BatchID), "since_batch_created", time.Since(created[c.BatchID]).Round(time.Millisecond))
		} else {
			p.logger.ErrorContext(ctx, "ledger committed a batch whose anchor is not pending",
				"batch_id", shortID(c.BatchID), "anchor_seq", c.AnchorSeq)
		}
	}
}

// statuses asks the ledger about batches, one request per scope. The batches of a scope that
// could not be asked are missing from the answer and counted in res.Errors.
func (p *Poller) statuses(ctx context.Context, batches []store.LedgerBatch, res *PollResult) map[string]ledger.BatchStatus {
	byScope := make(map[string][]string)
	for _, b := range batches {
		byScope[b.ServiceID] = append(byScope[b.ServiceID], b.HeaderSignature)
	}
	out := make(map[string]ledger.BatchStatus, len(batches))
	for scope, ids := range byScope {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		st, err := p.client.Statuses(rctx, ids, scope)
		cancel()
		if err != nil {
			p.m.checks.WithLabelValues("error").Inc()
			res.Errors += len(ids)
			p.logger.WarnContext(ctx, "ask ledger for batch statuses", "error", err, "service_id", scope, "batches", len(ids))
			continue
		}
		p.m.checks.WithLabelValues("ok").Inc()
		for _, id := range ids {
			out[id] = st[id]
		}
	}
	return out
}

// apply records a batch's status (not COMMITTED: see commitAll); INVALID fails its anchor
// and gives its operations back to the queue.
func (p *Poller) apply(ctx context.Context, b store.LedgerBatch, st ledger.BatchStatus) pollOutcome {
	log := p.logger.With("batch_id", shortID(b.HeaderSignature), "anchor_seq", b.AnchorSeq)
	to := string(st.Status)
	var err error
	switch st.Status {
	case ledger.StatusInvalid:
		var requeued bool
		err = p.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := p.settleBatch(ctx, tx, b, st); err != nil {
				return err
			}
			var err error
			requeued, err = failAnchor(ctx, tx, p.cfg.RequeueFunc, log, b.AnchorSeq,
				"the ledger found batch "+shortID(b.HeaderSignature)+" INVALID: "+st.Message)
			return err
		})
		if err == nil {
			if requeued {
				p.m.anchors.WithLabelValues("failed").Inc()
			}
			log.InfoContext(ctx, "ledger found batch invalid; anchor failed", "message", st.Message, "operations_requeued", requeued)
		}
	default: // PENDING, UNKNOWN
		if b.DLTStatus != to {
			err = p.group.Do(ctx, func(ctx context.Context, tx store.Executor) error {
				return tx.LedgerBatchSetStatus(ctx, store.LedgerBatchSetStatusParams{BatchID: b.HeaderSignature, From: b.DLTStatus, To: to})
			})
		}
	}
	switch {
	case err == nil:
		if b.DLTStatus != to {
			p.m.transitions.WithLabelValues(b.DLTStatus, to).Inc()
		}
		return statusOutcome[st.Status]
	case errors.Is(err, store.ErrNotFound):
		log.InfoContext(ctx, "batch status moved meanwhile; left alone", "error", err)
		return pollConflict
	case ctx.Err() != nil:
		return pollError
	default:
		log.ErrorContext(ctx, "record batch status", "status", to, "error", err)
		return pollError
	}
}

// settleBatch moves a batch to INVALID and records a receipt per transaction.
func (p *Poller) settleBatch(ctx context.Context, tx store.Executor, b store.LedgerBatch, st ledger.BatchStatus) error {
	if err := tx.LedgerBatchSetStatus(ctx, store.LedgerBatchSetStatusParams{
		BatchID: b.HeaderSignature, From: b.DLTStatus, To: string(st.Status),
	}); err != nil {
		return err
	}
	txns, err := tx.LedgerTransactionList(ctx, b.HeaderSignature)
	if err != nil {
		return err
	}
	receipts := make([]store.LedgerReceipt, len(txns))
	for i, t := range txns {
		receipts[i] = store.LedgerReceipt{TransactionID: t.HeaderSignature, ResultValid: st.Status == ledger.StatusCommitted,
			ErrorMessage: st.Message, ExternalStatus: string(st.Status)}
	}
	return tx.LedgerReceiptInsertMany(ctx, receipts)
}

// resubmit hands a batch the ledger lost back to the submitters.
func (p *Poller) resubmit(ctx context.Context, b store.LedgerBatch, now time.Time) pollOutcome {
	log := p.logger.With("batch_id", shortID(b.HeaderSignature), "anchor_seq", b.AnchorSeq)
	since := now.Sub(*b.SubmittedAt).Round(time.Second)
	err := p.group.Do(ctx, func(ctx context.Context, tx store.Executor) error {
		return tx.LedgerBatchResubmit(ctx, store.LedgerBatchResubmitParams{
			BatchID: b.HeaderSignature, From: b.DLTStatus,
			History: appendHistory(b.History, fmt.Sprintf("the ledger lost the batch: UNKNOWN twice, %s after its submission; sending it again", since)),
		})
	})
	switch {
	case err == nil:
		p.m.resubmitted.Inc()
		p.m.transitions.WithLabelValues(b.DLTStatus, "RESUBMIT").Inc()
		log.WarnContext(ctx, "ledger lost a batch; resubmitting it", "unknown_since_submission", since)
		return pollResubmitted
	case errors.Is(err, store.ErrNotFound):
		return pollConflict
	case ctx.Err() != nil:
		return pollError
	default:
		log.ErrorContext(ctx, "resubmit lost batch", "error", err)
		return pollError
	}
}

// pollOutcome is what became of one batch in a poll.
type pollOutcome int

const (
	pollCommitted pollOutcome = iota
	pollInvalid
	pollPending
	pollUnknown
	pollResubmitted
	pollConflict
	pollError
)

var statusOutcome = map[ledger.Status]pollOutcome{
	ledger.StatusCommitted: pollCommitted, ledger.StatusInvalid: pollInvalid,
	ledger.StatusPending: pollPending, ledger.StatusUnknown: pollUnknown,
}

func (r *PollResult) add(o pollOutcome) {
	switch o {
	case pollCommitted:
		r.Committed++
	case pollInvalid:
		r.Invalid++
	case pollPending:
		r.Pending++
	case pollUnknown:
		r.Unknown++
	case pollResubmitted:
		r.Resubmitted++
	case pollConflict:
		r.Conflicts++
	case pollError:
		r.Errors++
	}
}
