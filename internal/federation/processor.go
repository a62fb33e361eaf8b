package federation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// Processor runs the handlers of inbox activities: it claims due queued rows, runs the handler
// of each activity's type, and settles the row (done, retried after a backoff, or parked as a
// dead letter). A failing activity never blocks the ones behind it. Every instance runs one.
type Processor struct {
	s *Service
	// handled is signalled with each activity's outcome; tests only.
	handled testsignal.Signal[InboxOutcome]
}

// InboxOutcome is what became of one handling of an inbox activity.
type InboxOutcome struct {
	Seq        int64
	ActivityID string
	Type       activity.Type
	// Outcome is done, retried or parked.
	Outcome string
	Err     error
}

// ProcessResult is what one round did.
type ProcessResult struct {
	Claimed, Done, Retried, Parked int
}

// Processor returns the service's inbox processor. Once it exists, no handler can be
// registered.
func (s *Service) Processor() *Processor {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	return &Processor{s: s}
}

// Run processes the inbox until ctx is done, like Deliverer.Run.
func (p *Processor) Run(ctx context.Context) error {
	s := p.s
	attempt := 0
	for ctx.Err() == nil {
		res, err := p.runOnce(ctx)
		wait := s.cfg.PollInterval
		switch {
		case err != nil && ctx.Err() == nil:
			attempt++
			wait = loop.Backoff(attempt, s.cfg.PollInterval, 2, time.Minute)
			s.cfg.Logger.WarnContext(ctx, "process inbox", "error", err, "retry_in", wait)
		case err == nil:
			attempt = 0
			if res.Claimed >= min(s.cfg.ClaimLimit, s.cfg.InboxConcurrency) {
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-s.wake.inboxCh:
		case <-time.After(loop.Jitter(wait, 0.1)):
		}
	}
	return nil
}

func (p *Processor) runOnce(ctx context.Context) (ProcessResult, error) {
	s := p.s
	var res ProcessResult
	claimed, err := s.st.ActivityInboxClaim(ctx, store.ActivityClaimParams{
		Owner: s.cfg.InstanceID, Limit: min(s.cfg.ClaimLimit, s.cfg.InboxConcurrency), TTL: p.claimTTL(),
	})
	if err != nil {
		return res, fmt.Errorf("claim inbox activities: %w", err)
	}
	res.Claimed = len(claimed)
	outcomes := make([]string, len(claimed))
	g := errgroup.Group{}
	g.SetLimit(s.cfg.InboxConcurrency)
	for i, row := range claimed {
		g.Go(func() error {
			outcomes[i] = p.process(ctx, row)
			return nil
		})
	}
	_ = g.Wait()
	for _, o := range outcomes {
		switch o {
		case outcomeDelivered:
			res.Done++
		case outcomeRetried:
			res.Retried++
		case outcomeParked:
			res.Parked++
		}
	}
	return res, nil
}

// claimTTL covers a round: it claims no more rows than it handles at once, so one handler's
// timeout, plus a margin for settling, bounds it — and bounds how long the rows of a process
// that died stay claimed.
func (p *Processor) claimTTL() time.Duration {
	return p.s.cfg.HandlerTimeout + p.s.cfg.HandlerTimeout/4
}

func (p *Processor) process(ctx context.Context, row store.InboxActivity) string {
	s := p.s
	err := p.handle(ctx, row)
	outcome, settleErr := settle(ctx, s, settleParams{
		claim: row.Claim(), attempts: row.Attempts, err: err, permanent: isPermanent(err),
		kind: "inbox", ref: inboxRefPrefix + strconv.FormatInt(row.Seq, 10),
		what: row.Type + " " + row.ActivityID + " from " + row.From, payload: row.Body, history: row.History,
		complete: func(ctx context.Context, tx store.Executor, c store.ActivityClaim) error {
			return tx.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: c, Keep: s.cfg.InboxKeep})
		},
		retry: func(ctx context.Context, tx store.Executor, rp store.ActivityRetryParams) error {
			return tx.ActivityInboxRetry(ctx, rp)
		},
		park: func(ctx context.Context, tx store.Executor, rp store.ActivityRetryParams) error {
			return tx.ActivityInboxPark(ctx, rp)
		},
	})
	if settleErr != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.WarnContext(ctx, "settle inbox activity", "seq", row.Seq, "error", settleErr)
		}
		return outcomeLost
	}
	label := outcome
	if label == outcomeDelivered {
		label = "done"
	}
	if outcome != outcomeLost {
		s.m.inbox.WithLabelValues(row.Type, label).Inc()
	}
	switch outcome {
	case outcomeRetried:
		s.cfg.Logger.InfoContext(ctx, "inbox activity failed; will retry", "activity", row.ActivityID, "type", row.Type,
			"attempt", row.Attempts+1, "error", err)
	case outcomeParked:
		s.cfg.Logger.WarnContext(ctx, "inbox activity parked", "activity", row.ActivityID, "type", row.Type,
			"attempts", row.Attempts+1, "error", err)
	}
	p.handled.Signal(InboxOutcome{Seq: row.Seq, ActivityID: row.ActivityID, Type: activity.Type(row.Type), Outcome: label, Err: err})
	return outcome
}

// handle runs the activity's handler within HandlerTimeout. An activity of a type nothing
// handles is done: it stays in the inbox collection.
func (p *Processor) handle(ctx context.Context, row store.InboxActivity) error {
	s := p.s
	a, err := activity.ParseWithLimits(row.Body, activity.Limits{MaxBytes: int(s.cfg.MaxInboxBytes)})
	if err != nil {
		return Permanent(fmt.Errorf("stored activity no longer parses: %w", err))
	}
	h, ok := s.handler(a.Type)
	if !ok {
		s.cfg.Logger.DebugContext(ctx, "no handler for inbox activity", "activity", row.ActivityID, "type", row.Type)
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, s.cfg.HandlerTimeout)
	defer cancel()
	return h.Handle(hctx, Inbound{
		Activity: a, Body: row.Body, Actor: row.Actor, From: row.From, Source: Source(row.Source), Seq: row.Seq,
	})
}

func isPermanent(err error) bool {
	return err != nil && (pubsub.IsPermanent(err) || errors.Is(err, ErrForbidden) || errors.Is(err, activity.ErrInvalid))
}
