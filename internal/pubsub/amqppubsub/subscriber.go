package amqppubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
)

// deliveryFunc settles one delivery. subCtx ends when the consumer stops taking deliveries;
// handlerCtx lives until the drain timeout after that.
type deliveryFunc func(subCtx, handlerCtx context.Context, d *amqp.Delivery)

// Subscribe implements pubsub.Subscriber. The pool's slots are spread over
// ceil(poolSize / SubscriberChannelSlots) channels, each with a prefetch equal to its slots, so
// at most poolSize messages are unacked at once and a busy slot never holds back another. When
// the connection or a channel is lost, the subscription resubscribes with backoff until ctx
// ends; unacked messages go back to the queue by the broker's doing.
func (ps *PubSub) Subscribe(ctx context.Context, topic string, poolSize int, handler pubsub.Handler) error {
	if ps.closed.Load() {
		return fmt.Errorf("subscribe to %s: %w", topic, pubsub.ErrClosed)
	}
	queue, ok := ps.topo.queues[topic]
	if !ok {
		return fmt.Errorf("subscribe to %s: %w", topic, pubsub.ErrUnroutable)
	}
	if poolSize < 1 {
		return fmt.Errorf("subscribe to %s: pool size %d is less than 1", topic, poolSize)
	}
	s := &subscription{ps: ps, topic: topic, handler: handler}
	return ps.consume(ctx, queue, topic, poolSize, s.handle)
}

// consume runs a pool of poolSize consumers on queue until ctx is done, then drains, closes its
// channels and returns nil. It resubscribes after losing its channels.
func (ps *PubSub) consume(ctx context.Context, queue, label string, poolSize int, fn deliveryFunc) error {
	handlerCtx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	// Once ctx ends, handlers keep their context for the drain timeout at most. The AfterFunc's
	// goroutine ends with the timer or when consume returns (cancelHandlers above).
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.NewTimer(ps.cfg.DrainTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancelHandlers()
		case <-handlerCtx.Done():
		}
	})
	defer stopDrain()

	log := ps.log.With("queue", queue, "topic", label)
	failures := 0
	for {
		consumed, err := ps.consumeOnce(ctx, handlerCtx, queue, poolSize, fn)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, pubsub.ErrClosed) {
			return fmt.Errorf("consume %s: %w", queue, err)
		}
		if consumed {
			failures = 0
		}
		var amqpErr *amqp.Error
		if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound {
			// The queue is gone while the connection stayed up: declare it again.
			if derr := ps.redeclare(ctx); derr != nil {
				err = errors.Join(err, fmt.Errorf("redeclare: %w", derr))
			}
		}
		failures++
		wait := loop.Jitter(loop.Backoff(failures, ps.cfg.ReconnectInterval, 2, ps.cfg.ReconnectMax), 0.2)
		log.WarnContext(ctx, "subscription lost; resubscribing", "retry_in", wait, "error", err)
		if !loop.Sleep(ctx, wait) {
			return nil
		}
	}
}

// consumeOnce opens the channels, consumes until ctx ends or a channel dies, waits for the
// workers and closes the channels. consumed reports whether consumption was established.
func (ps *PubSub) consumeOnce(ctx, handlerCtx context.Context, queue string, poolSize int, fn deliveryFunc) (consumed bool, err error) {
	type slotChannel struct {
		ch         *amqp.Channel
		cn         *conn
		slots      int
		deliveries <-chan amqp.Delivery
	}
	var chans []*slotChannel
	defer func() {
		for _, sc := range chans {
			ps.subConn.release(sc.ch, sc.cn)
		}
	}()
	per := ps.cfg.SubscriberChannelSlots
	for left := poolSize; left > 0; left -= per {
		ch, cn, err := ps.subConn.channel(ctx)
		if err != nil {
			return false, err
		}
		sc := &slotChannel{ch: ch, cn: cn, slots: min(per, left)}
		chans = append(chans, sc)
		if err := ch.Qos(sc.slots, 0, false); err != nil {
			return false, fmt.Errorf("set prefetch on %s: %w", queue, err)
		}
		if sc.deliveries, err = ch.Consume(queue, "", false, false, false, false, nil); err != nil {
			return false, fmt.Errorf("consume %s: %w", queue, err)
		}
	}

	// lost ends the workers' intake when any channel dies, so that the whole pool resubscribes.
	workCtx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	var wg sync.WaitGroup
	for _, sc := range chans {
		for range sc.slots {
			wg.Go(func() {
				for {
					select {
					case <-workCtx.Done():
						return
					case d, ok := <-sc.deliveries:
						if !ok {
							lost(fmt.Errorf("channel on %s closed", queue))
							return
						}
						if workCtx.Err() != nil {
							return // not handled: the broker requeues it when the channel closes
						}
						fn(ctx, handlerCtx, &d)
					}
				}
			})
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		return true, nil
	}
	return true, context.Cause(workCtx)
}

// subscription settles deliveries of one Subscribe call.
type subscription struct {
	ps      *PubSub
	topic   string
	handler pubsub.Handler
}

func (s *subscription) handle(subCtx, handlerCtx context.Context, d *amqp.Delivery) {
	m := s.ps.metrics
	msg := message(d, s.topic)
	m.delivered.WithLabelValues(s.topic).Inc()
	start := time.Now()
	err := call(handlerCtx, s.handler, &msg)
	m.handlerSeconds.WithLabelValues(s.topic).Observe(time.Since(start).Seconds())
	if err == nil {
		if ackErr := d.Ack(false); ackErr != nil {
			// The broker will deliver it again: at least once.
			s.ps.log.WarnContext(handlerCtx, "ack failed", "topic", s.topic, "message_id", msg.ID, "error", ackErr)
			return
		}
		m.acked.WithLabelValues(s.topic).Inc()
		return
	}
	if subCtx.Err() != nil && handlerCtx.Err() != nil {
		// Interrupted by the drain timeout: back to the queue without counting an attempt.
		_ = d.Nack(false, true)
		return
	}
	m.nacked.WithLabelValues(s.topic).Inc()
	// Report the failure, with its reason, to the redelivery router, then ack. Should that
	// publish fail, reject instead: the queue dead-letters the message to the same router,
	// without the reason.
	report := republishing(d, amqp.Table{
		hdrTopic:     s.topic,
		hdrAttempt:   int32(msg.Attempt),
		hdrFailure:   truncate(err.Error(), failureLimit),
		hdrPermanent: pubsub.IsPermanent(err),
	})
	if perr := s.ps.internalPublish(handlerCtx, s.ps.topo.redelivery, "redelivery", report); perr != nil {
		s.ps.log.WarnContext(handlerCtx, "failure report not published; dead-lettering", "topic", s.topic,
			"message_id", msg.ID, "error", perr)
		_ = d.Nack(false, false)
		return
	}
	_ = d.Ack(false)
}

// call runs the handler and turns a panic into an error.
func call(ctx context.Context, h pubsub.Handler, msg *pubsub.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, msg)
}
