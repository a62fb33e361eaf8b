package submitter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// errorBackoffMax caps the wait after failed rounds (database unavailable).
const errorBackoffMax = 30 * time.Second

// SubmitResult is what one claim round did. Every claimed batch is counted in exactly one of
// the fields after Claimed.
type SubmitResult struct {
	Claimed int
	// Accepted: the ledger took the batch (2xx, or no answer and a status check found it).
	Accepted int
	// Held: the batch may have been sent by an earlier claim and the ledger holds it; recorded
	// as submitted without sending it again.
	Held int
	// Rejected: 400 or 404; the anchor failed and its operations went back to the queue.
	Rejected int
	// Retried: a retry answer; the claim was relinquished with backoff.
	Retried int
	// Deferred: not sent (the claim deadline came first, or shutdown); relinquished, due now.
	Deferred int
	// Parked: attempts ran out; the batch is in dead_letters, the anchor failed and its
	// operations went back to the queue.
	Parked int
	// Fenced: the claim had been taken over; nothing was written.
	Fenced int
	// Failed: the outcome could not be recorded; the claim was relinquished (maybe
	// submitted) or is left to expire.
	Failed int
}

func (r *SubmitResult) add(o outcome) {
	switch o {
	case outcomeAccepted:
		r.Accepted++
	case outcomeHeld:
		r.Held++
	case outcomeRejected:
		r.Rejected++
	case outcomeRetried:
		r.Retried++
	case outcomeDeferred:
		r.Deferred++
	case outcomeParked:
		r.Parked++
	case outcomeFenced:
		r.Fenced++
	case outcomeFailed:
		r.Failed++
	}
}

// Submitter claims unsubmitted ledger batches and delivers them to a ledger. Any number of
// submitters, in any number of instances, may share one database.
type Submitter struct {
	cfg    Config
	st     store.Store
	client ledger.Client
	logger *slog.Logger
	m      *submitterMetrics
	// sem bounds the ledger requests in flight across all rounds.
	sem chan struct{}
	// group writes the outcomes of concurrent settles in shared transactions.
	group *groupTx

	testSignals struct {
		round testsignal.Signal[SubmitResult] // a round of Run was settled
	}
}

// New returns a Submitter that claims batches in st and submits them through client.
func New(cfg Config, st store.Store, client ledger.Client) (*Submitter, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if st == nil || client == nil {
		return nil, errors.New("new submitter: store and ledger client are required")
	}
	m, err := newSubmitterMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Submitter{cfg: cfg, st: st, client: client, logger: cfg.Logger, m: m,
		sem: make(chan struct{}, cfg.Concurrency), group: &groupTx{st: st}}, nil
}

// Run claims and submits batches until ctx is done, then returns nil once every claimed batch
// is settled (claims cut short by ctx are relinquished, not left to expire).
//
// Rounds overlap: a round claims batches and settles them (at most Concurrency requests in
// flight across rounds), and Run claims again as soon as half of ClaimLimit is free, so a
// request that hangs until its timeout holds one slot, not a whole round. When a claim finds
// fewer batches than it asked for, Run waits Interval (with jitter) before the next; a failed
// claim is logged and retried with backoff.
func (s *Submitter) Run(ctx context.Context) error {
	s.logger.InfoContext(ctx, "submitter started", "config", s.cfg)
	defer s.logger.InfoContext(ctx, "submitter stopped")
	var rounds sync.WaitGroup
	defer rounds.Wait()
	var held atomic.Int64
	// settled is poked (never blocking) by rounds when a batch is settled; Run owns it and
	// never closes it.
	settled := make(chan struct{}, 1)
	half := (s.cfg.ClaimLimit + 1) / 2
	failures := 0
	// The first claim is staggered so that instances started together drift apart.
	next := time.Now().Add(loop.Jitter(s.cfg.Interval, 0.5))
	for {
		room := s.cfg.ClaimLimit - int(held.Load())
		if room >= half && !time.Now().Before(next) {
			start := time.Now()
			batches, err := s.claim(ctx, room)
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				failures++
				s.m.roundErrors.Inc()
				wait := loop.Backoff(failures, s.cfg.Interval, 2, max(errorBackoffMax, s.cfg.Interval))
				s.logger.WarnContext(ctx, "claim failed", "error", err, "failures", failures, "retry_in", wait)
				next = time.Now().Add(wait)
			case len(batches) < room:
				failures, next = 0, time.Now().Add(loop.Jitter(s.cfg.Interval, 0.2))
			default:
				failures, next = 0, time.Now()
			}
			if len(batches) > 0 {
				held.Add(int64(len(batches)))
				rounds.Go(func() {
					res := s.settleAll(ctx, start, batches, func() {
						held.Add(-1)
						select {
						case settled <- struct{}{}:
						default:
						}
					})
					s.logger.DebugContext(ctx, "round settled", "result", res)
					s.testSignals.round.Signal(res)
				})
			}
			continue
		}
		var due <-chan time.Time
		var timer *time.Timer
		if room >= half {
			timer = time.NewTimer(time.Until(next))
			due = timer.C
		}
		select {
		case <-ctx.Done():
		case <-settled:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// runOnce claims up to ClaimLimit batches and settles them all; it is one round of Run, run to
// completion. It returns an error only when the claim failed; per-batch failures are counted
// in the result.
func (s *Submitter) runOnce(ctx context.Context) (SubmitResult, error) {
	start := time.Now()
	batches, err := s.claim(ctx, s.cfg.ClaimLimit)
	if err != nil {
		return SubmitResult{}, err
	}
	return s.settleAll(ctx, start, batches, nil), nil
}

// claim claims up to limit batches for ClaimTTL. A claim statement that is slow to return is
// harmless: the round's work window counts from before it was sent.
func (s *Submitter) claim(ctx context.Context, limit int) ([]store.LedgerBatch, error) {
	cctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	batches, err := s.st.LedgerBatchClaim(cctx, store.LedgerBatchClaimParams{
		Owner: s.cfg.InstanceID, Limit: limit, TTL: s.cfg.ClaimTTL,
	})
	if err != nil {
		return nil, fmt.Errorf("claim ledger batches: %w", err)
	}
	s.m.claimed.Add(float64(len(batches)))
	return batches, nil
}

// settleAll settles claimed batches: submits each (holding a slot of the shared request
// semaphore while it talks to the ledger) and records the outcome under the claim's fence; onSettled, when set, is called
// after each. start is when the claim statement was sent: ledger requests end before
// start + ClaimTTL × 3/4, hence before the claims expire, whatever the clocks say.
func (s *Submitter) settleAll(ctx context.Context, start time.Time, batches []store.LedgerBatch, onSettled func()) SubmitResult {
	res := SubmitResult{Claimed: len(batches)}
	if len(batches) == 0 {
		return res
	}
	work, cancelWork := context.WithDeadline(ctx, start.Add(s.cfg.workWindow()))
	defer cancelWork()
	held := s.checkHeld(work, batches)

	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range batches {
		wg.Go(func() {
			var o outcome
			select {
			case s.sem <- struct{}{}:
				record := s.decide(ctx, work, b, held[b.HeaderSignature])
				<-s.sem
				o = record()
			case <-work.Done():
				o = s.deferBatch(ctx, s.logger.With("batch_id", shortID(b.HeaderSignature)), b)
			}
			mu.Lock()
			res.add(o)
			mu.Unlock()
			if onSettled != nil {
				onSettled()
			}
		})
	}
	wg.Wait()
	return res
}

// heldCheck is what the ledger said about a batch that may have been sent before.
type heldCheck struct {
	asked  bool
	status ledger.Status
	err    error
}

// checkHeld asks the ledger, one request per scope, about the claimed batches that may have
// been sent by an earlier claim.
func (s *Submitter) checkHeld(ctx context.Context, batches []store.LedgerBatch) map[string]heldCheck {
	byScope := make(map[string][]string)
	for _, b := range batches {
		if b.MaybeSubmitted {
			byScope[b.ServiceID] = append(byScope[b.ServiceID], b.HeaderSignature)
		}
	}
	out := make(map[string]heldCheck)
	for scope, ids := range byScope {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		statuses, err := s.client.Statuses(rctx, ids, scope)
		cancel()
		for _, id := range ids {
			if err != nil {
				out[id] = heldCheck{asked: true, err: err}
				continue
			}
			out[id] = heldCheck{asked: true, status: statuses[id].Status}
		}
	}
	return out
}
