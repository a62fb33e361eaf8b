package amqppubsub

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/loop"
)

// deliverSlack is how early a waiting message may be forwarded: it absorbs rounding and small
// clock differences between the instance that scheduled the wait and the one that routes it,
// which would otherwise cost a whole extra hop through the shortest tier.
const deliverSlack = 10 * time.Millisecond

// router consumes the redelivery queue. Three kinds of messages arrive there:
//
//   - failure reports, published by a subscriber whose handler failed (with the error), or
//     dead-lettered by a topic queue after a reject (without it);
//   - messages back from a wait queue (stage "wait"), dead-lettered when their tier's TTL
//     expired: redelivery waits and delayed publishes alike.
//
// For a failure of delivery n it parks the message (permanent error, or n = MaxAttempts),
// forwards it to its topic queue at once (Delay(n) = 0), or sends it to the wait tier of
// Delay(n). A waiting message is forwarded when due, or sent through another tier hop. Every
// step publishes a copy with confirms and acks the original only then; a failed step nacks it
// back onto the redelivery queue after a pause.
type router struct {
	ps       *PubSub
	failures atomic.Int32 // consecutive failed steps, for the pause
}

func (r *router) route(subCtx, handlerCtx context.Context, d *amqp.Delivery) {
	ps := r.ps
	queue, label, pub := r.next(d, time.Now())
	if err := ps.internalPublish(handlerCtx, queue, label, pub); err != nil {
		n := int(r.failures.Add(1))
		red := ps.cfg.Redelivery
		wait := loop.Backoff(n, red.InitialInterval, red.Multiplier, red.MaxInterval)
		ps.log.WarnContext(handlerCtx, "redelivery step failed; retrying", "message_id", d.MessageId,
			"to", queue, "retry_in", wait, "error", err)
		loop.Sleep(subCtx, wait)
		_ = d.Nack(false, true)
		return
	}
	r.failures.Store(0)
	_ = d.Ack(false)
}

// next decides where a message of the redelivery queue goes: the queue to publish the copy to,
// the metrics label, and the copy.
func (r *router) next(d *amqp.Delivery, now time.Time) (queue, label string, pub amqp.Publishing) {
	ps, topo := r.ps, r.ps.topo
	topic := headerString(d.Headers, hdrTopic)
	if topic == "" {
		// Dead-lettered from a topic queue by a client that did not set our headers.
		topic, _ = topo.topicOf(headerString(d.Headers, "x-first-death-queue"))
	}
	dest, known := topo.queues[topic]

	if headerString(d.Headers, hdrStage) == stageWait {
		remaining := time.UnixMilli(int64(headerInt(d.Headers, hdrDeliverAt))).Sub(now)
		if remaining > deliverSlack && known {
			tier := topo.tierFor(remaining)
			return topo.waitQueue(tier), "wait", republishing(d, nil)
		}
		if known {
			return dest, topic, republishing(d, amqp.Table{hdrStage: nil, hdrDeliverAt: nil})
		}
	}

	failed := max(headerInt(d.Headers, hdrAttempt), 1)
	failure := headerString(d.Headers, hdrFailure)
	if failure == "" {
		failure = fmt.Sprintf("rejected without a reason (%s)", headerString(d.Headers, "x-first-death-reason"))
	}
	history := appendHistory(headerStrings(d.Headers, hdrHistory), now, failed, failure)
	red := ps.cfg.Redelivery
	var reason string
	switch {
	case !known:
		reason = fmt.Sprintf("no destination topic %q: %s", topic, failure)
	case headerBool(d.Headers, hdrPermanent):
		reason = failure
	case failed >= red.MaxAttempts:
		reason = fmt.Sprintf("failed %d attempts, last: %s", failed, failure)
	}
	if reason != "" {
		ps.metrics.parked.WithLabelValues(topic).Inc()
		ps.log.Warn("message parked", "topic", topic, "message_id", d.MessageId, "attempts", failed, "reason", reason)
		return topo.parked, "parked", republishing(d, amqp.Table{
			hdrTopic:     topic,
			hdrAttempt:   int32(failed),
			hdrHistory:   history,
			hdrReason:    truncate(reason, failureLimit),
			hdrParkedAt:  now.UnixMilli(),
			hdrFailure:   nil,
			hdrPermanent: nil,
			hdrStage:     nil,
			hdrDeliverAt: nil,
		})
	}

	delay := red.Delay(failed)
	set := amqp.Table{
		hdrTopic:     topic,
		hdrAttempt:   int32(failed + 1),
		hdrHistory:   history,
		hdrFailure:   nil,
		hdrPermanent: nil,
	}
	if delay <= 0 {
		ps.metrics.redelivered.WithLabelValues(topic, "0s").Inc()
		set[hdrStage], set[hdrDeliverAt] = nil, nil
		return dest, topic, republishing(d, set)
	}
	tier := topo.tierFor(delay)
	ps.metrics.redelivered.WithLabelValues(topic, tier.String()).Inc()
	set[hdrStage], set[hdrDeliverAt] = stageWait, now.Add(delay).UnixMilli()
	return topo.waitQueue(tier), "wait", republishing(d, set)
}
