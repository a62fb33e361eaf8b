package federation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// deliveryRefPrefix and inboxRefPrefix name, in a dead letter's Ref, which work item it parks.
const (
	deliveryRefPrefix = "delivery/"
	inboxRefPrefix    = "inbox/"
)

// Deliverer POSTs the activities of our outbox to their recipients' inboxes: it claims due
// deliveries, resolves each recipient's inbox, POSTs the signed activity, and settles the
// delivery (delivered, retried after a backoff, or parked as a dead letter after the last
// attempt). Every instance runs one; claims keep them from sending the same delivery at once.
type Deliverer struct {
	s *Service
	// gaugesAt is when the state gauges were last read; owned by Run's goroutine.
	gaugesAt time.Time
	// delivered is signalled with each delivery's outcome; tests only.
	delivered testsignal.Signal[DeliveryOutcome]
}

// DeliveryOutcome is what became of one delivery attempt.
type DeliveryOutcome struct {
	ID        int64
	Recipient string
	// Outcome is delivered, retried or parked.
	Outcome string
	Err     error
}

// DeliverResult is what one round did.
type DeliverResult struct {
	Claimed, Delivered, Retried, Parked int
}

// Deliverer returns the service's deliverer.
func (s *Service) Deliverer() *Deliverer { return &Deliverer{s: s} }

// Run delivers until ctx is done: a round at once, then whenever a post wakes it or the poll
// interval passes, and straight away again while rounds come back full.
func (d *Deliverer) Run(ctx context.Context) error {
	s := d.s
	attempt := 0
	for ctx.Err() == nil {
		res, err := d.runOnce(ctx)
		wait := s.cfg.PollInterval
		switch {
		case err != nil && ctx.Err() == nil:
			attempt++
			wait = loop.Backoff(attempt, s.cfg.PollInterval, 2, time.Minute)
			s.cfg.Logger.WarnContext(ctx, "deliver activities", "error", err, "retry_in", wait)
		case err == nil:
			attempt = 0
			if res.Claimed >= min(s.cfg.ClaimLimit, s.cfg.DeliveryConcurrency) {
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-s.wake.outboxCh:
		case <-time.After(loop.Jitter(wait, 0.1)):
		}
	}
	return nil
}

// runOnce claims due deliveries and attempts each, DeliveryConcurrency at a time.
func (d *Deliverer) runOnce(ctx context.Context) (DeliverResult, error) {
	s := d.s
	var res DeliverResult
	claimed, err := s.st.ActivityDeliveryClaim(ctx, store.ActivityClaimParams{
		Owner: s.cfg.InstanceID, Limit: min(s.cfg.ClaimLimit, s.cfg.DeliveryConcurrency), TTL: d.claimTTL(),
	})
	if err != nil {
		return res, fmt.Errorf("claim deliveries: %w", err)
	}
	res.Claimed = len(claimed)
	outcomes := make([]string, len(claimed))
	bodies := d.expand(ctx, claimed)
	g := errgroup.Group{}
	g.SetLimit(s.cfg.DeliveryConcurrency)
	for i, dl := range claimed {
		g.Go(func() error {
			outcomes[i] = d.deliver(ctx, dl, bodies[dl.OutboxSeq])
			return nil
		})
	}
	_ = g.Wait()
	for _, o := range outcomes {
		switch o {
		case outcomeDelivered:
			res.Delivered++
		case outcomeRetried:
			res.Retried++
		case outcomeParked:
			res.Parked++
		}
	}
	d.refreshGauges(ctx)
	return res, nil
}

// claimTTL covers a round of deliveries: it claims no more than it sends at once, so one
// delivery's two requests (resolving the inbox, the POST), each bounded by the client's
// timeout, plus a margin bound it.
func (d *Deliverer) claimTTL() time.Duration {
	return 3 * d.s.client.Timeout()
}

// Outcomes of one attempt.
const (
	outcomeDelivered = "delivered"
	outcomeRetried   = "retried"
	outcomeParked    = "parked"
	outcomeLost      = "lost" // the claim was taken over; the new holder settles it
)

// expanded is an outbox activity's body as posted, or why it could not be had.
type expanded struct {
	body []byte
	err  error
}

// expand returns the bodies of the claimed deliveries' activities as posted, by outbox row: the
// claim returns them as stored, and an activity stored without its linkset is expanded once
// for all its recipients in the round.
func (d *Deliverer) expand(ctx context.Context, claimed []store.ActivityDelivery) map[int64]expanded {
	out := make(map[int64]expanded, len(claimed))
	for _, dl := range claimed {
		if _, ok := out[dl.OutboxSeq]; ok {
			continue
		}
		body, err := outboxbody.Expand(ctx, d.s.st, dl.Body)
		if err != nil {
			err = fmt.Errorf("outbox activity %s: %w", dl.ActivityID, err)
		}
		out[dl.OutboxSeq] = expanded{body: body, err: err}
	}
	return out
}

func (d *Deliverer) deliver(ctx context.Context, dl store.ActivityDelivery, act expanded) string {
	s := d.s
	// What cannot be expanded is not sent: an attempt that failed, and its dead letter keeps
	// the row as stored.
	body, err := act.body, act.err
	if err == nil {
		err = d.post(ctx, dl.Recipient, body)
	} else {
		body = dl.Body
	}
	outcome, settleErr := settle(ctx, s, settleParams{
		claim: dl.Claim(), attempts: dl.Attempts, err: err,
		// The outbound guard will refuse the same address next time: parked at once, with why.
		permanent: errors.Is(err, egress.ErrRefused), kind: "delivery", ref: deliveryRefPrefix + strconv.FormatInt(dl.ID, 10),
		what: "delivery of " + dl.ActivityID + " to " + dl.Recipient, payload: body, history: dl.History,
		complete: func(ctx context.Context, tx store.Executor, c store.ActivityClaim) error {
			return tx.ActivityDeliveryComplete(ctx, store.ActivityCompleteParams{Claim: c, Keep: s.cfg.DeliveredKeep})
		},
		retry: func(ctx context.Context, tx store.Executor, p store.ActivityRetryParams) error {
			return tx.ActivityDeliveryRetry(ctx, p)
		},
		park: func(ctx context.Context, tx store.Executor, p store.ActivityRetryParams) error {
			return tx.ActivityDeliveryPark(ctx, p)
		},
	})
	if settleErr != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.WarnContext(ctx, "settle delivery", "delivery", dl.ID, "error", settleErr)
		}
		return outcomeLost
	}
	if outcome != outcomeLost {
		s.m.deliveries.WithLabelValues(outcome).Inc()
	}
	switch outcome {
	case outcomeDelivered:
		s.cfg.Logger.DebugContext(ctx, "activity delivered", "activity", dl.ActivityID, "recipient", dl.Recipient)
	case outcomeRetried:
		s.cfg.Logger.InfoContext(ctx, "delivery failed; will retry", "activity", dl.ActivityID, "recipient", dl.Recipient,
			"attempt", dl.Attempts+1, "error", err)
	case outcomeParked:
		s.cfg.Logger.WarnContext(ctx, "delivery parked", "activity", dl.ActivityID, "recipient", dl.Recipient,
			"attempts", dl.Attempts+1, "error", err)
	}
	d.delivered.Signal(DeliveryOutcome{ID: dl.ID, Recipient: dl.Recipient, Outcome: outcome, Err: err})
	return outcome
}

// post resolves the recipient's inbox and POSTs the activity to it.
func (d *Deliverer) post(ctx context.Context, recipient string, body []byte) error {
	a, err := d.s.client.Actor(ctx, recipient)
	if err != nil {
		return err
	}
	return d.s.client.Post(ctx, a.Inbox, body)
}

// gaugeInterval spaces the counts behind the state gauges: they scan the inbox for parked rows.
const gaugeInterval = 15 * time.Second

func (d *Deliverer) refreshGauges(ctx context.Context) {
	if time.Since(d.gaugesAt) < gaugeInterval {
		return
	}
	d.gaugesAt = time.Now()
	c, err := d.s.st.ActivityCounts(ctx)
	if err != nil {
		return
	}
	d.s.m.setCounts(c)
}

// settleParams describe the outcome of one attempt at a claimed work item.
type settleParams struct {
	claim    store.ActivityClaim
	attempts int // before this attempt
	err      error
	// permanent parks at once, whatever the attempts.
	permanent bool
	kind      string
	ref       string
	what      string
	payload   []byte
	history   []string
	complete  func(ctx context.Context, tx store.Executor, c store.ActivityClaim) error
	retry     func(ctx context.Context, tx store.Executor, p store.ActivityRetryParams) error
	park      func(ctx context.Context, tx store.Executor, p store.ActivityRetryParams) error
}

// maxErrorBytes bounds an error kept in a row or a dead letter.
const maxErrorBytes = 512

// settle records the outcome of an attempt, fenced by the claim: completed on success; else
// retried after the redelivery backoff; parked, with a dead letter in the same transaction, once
// the attempts are spent or the error is permanent. A claim that was taken over is outcomeLost.
// The write does not use ctx's cancellation: an attempt that finished is recorded even during
// shutdown.
func settle(ctx context.Context, s *Service, p settleParams) (string, error) {
	ctx = context.WithoutCancel(ctx)
	if p.err == nil {
		err := s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return p.complete(ctx, tx, p.claim) })
		if errors.Is(err, store.ErrLeaseLost) {
			return outcomeLost, nil
		}
		return outcomeDelivered, err
	}
	attempt := p.attempts + 1
	msg := truncate(p.err.Error(), maxErrorBytes)
	line := fmt.Sprintf("%s attempt %d: %s", s.cfg.NowFunc().UTC().Format(time.RFC3339), attempt, msg)
	rp := store.ActivityRetryParams{Claim: p.claim, Error: msg, HistoryLine: line}
	outcome := outcomeRetried
	err := s.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if !p.permanent && attempt < s.cfg.Redelivery.MaxAttempts {
			r := s.cfg.Redelivery
			rp.Backoff = loop.Backoff(attempt, r.InitialInterval, r.Multiplier, r.MaxInterval)
			return p.retry(ctx, tx, rp)
		}
		outcome = outcomeParked
		if err := p.park(ctx, tx, rp); err != nil {
			return err
		}
		reason := fmt.Sprintf("%s failed after %d attempts: %s", p.what, attempt, msg)
		if p.permanent {
			reason = fmt.Sprintf("%s failed permanently: %s", p.what, msg)
		}
		_, err := tx.DeadLetterInsert(ctx, store.DeadLetter{
			Kind: store.DeadLetterActivity, Ref: p.ref, Payload: p.payload, Reason: truncate(reason, 2*maxErrorBytes),
			Attempts: attempt, History: append(p.history[:len(p.history):len(p.history)], line),
		})
		return err
	})
	if errors.Is(err, store.ErrLeaseLost) {
		return outcomeLost, nil
	}
	return outcome, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
