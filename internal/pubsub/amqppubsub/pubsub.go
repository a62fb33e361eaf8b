package amqppubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/secret"
)

// Connection roles: publishers and consumers never share a connection, so that broker flow
// control on publishers cannot hold back acks (RabbitMQ's advice, followed by Orb).
const (
	rolePublisher = "publisher"
	roleConsumer  = "consumer"
)

// PubSub is the RabbitMQ implementation of pubsub.PubSub. It is safe for concurrent use. Run
// must be running on at least one instance of a prefix for redelivery, delayed publish and
// parking to work; anchord runs it on every instance.
type PubSub struct {
	cfg       Config
	topo      *topology
	log       *slog.Logger
	metrics   *metrics
	pubConn   *connector
	subConn   *connector
	publisher *publisher
	closed    atomic.Bool
	closeOnce sync.Once
}

var _ pubsub.PubSub = (*PubSub)(nil)

// New validates cfg, connects and declares the topology. While the broker is unreachable it
// waits with backoff, logging each failed attempt, until ctx ends; it fails at once on
// configuration errors, on the broker's refusals (ErrRefused: credentials, a missing vhost) and
// when the broker's definitions conflict with cfg (for example another QueueType for the same
// prefix).
func New(ctx context.Context, cfg Config) (*PubSub, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := newMetrics(cfg.Registerer)
	log := cfg.Logger
	topo := newTopology(cfg)
	ps := &PubSub{cfg: cfg, topo: topo, log: log, metrics: m}
	ps.pubConn = newConnector(rolePublisher, cfg, topo.declare, m)
	ps.subConn = newConnector(roleConsumer, cfg, topo.declare, m)
	ps.publisher = newPublisher(ps.pubConn, cfg.PublisherChannelPoolSize, m)

	for attempt := 1; ; attempt++ {
		err := ps.pubConn.ensure(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, pubsub.ErrUnavailable) {
			ps.Close()
			return nil, fmt.Errorf("amqppubsub: %w", err)
		}
		if refused := refusal(cfg.URL, err); refused != nil {
			ps.Close()
			return nil, refused
		}
		log.WarnContext(ctx, "waiting for RabbitMQ", "url", secret.RedactURL(cfg.URL), "attempt", attempt, "error", err)
		if !ps.pubConn.waitRetry(ctx) {
			ps.Close()
			return nil, fmt.Errorf("stopped while waiting for RabbitMQ at %s (%w): %w", secret.RedactURL(cfg.URL), ctx.Err(), err)
		}
	}
	log.InfoContext(ctx, "connected to RabbitMQ", "url", secret.RedactURL(cfg.URL), "prefix", cfg.Prefix,
		"queue_type", cfg.QueueType, "wait_tiers", topo.tiers)
	return ps, nil
}

// Publish implements pubsub.Publisher.
func (ps *PubSub) Publish(ctx context.Context, topic string, msgs ...*pubsub.Message) error {
	queue, err := ps.destination("publish", topic)
	if err != nil {
		return err
	}
	now := time.Now()
	pubs := make([]amqp.Publishing, len(msgs))
	for i, m := range msgs {
		if m.ID == "" {
			m.ID = newID()
		}
		pubs[i] = newPublishing(m, topic, now)
	}
	err = ps.publisher.publish(ctx, ps.topo.exchange, queue, topic, pubs)
	var unroutable *unroutableError
	if errors.As(err, &unroutable) {
		// The topic is ours, so its queue is gone from the broker (deleted by hand, or
		// definitions reset while we stayed connected). Declare the topology again and
		// republish only the returned messages: the others are in the queue already.
		ps.log.WarnContext(ctx, "queue missing on the broker; declaring the topology again", "topic", topic)
		if derr := ps.publisher.detach(ctx, func() error { return ps.redeclare(ctx) }); derr != nil {
			return fmt.Errorf("publish to %s: %w (redeclare: %w)", topic, err, derr)
		}
		returned := make(map[string]bool, len(unroutable.ids))
		for _, id := range unroutable.ids {
			returned[id] = true
		}
		var again []amqp.Publishing
		for _, p := range pubs {
			if returned[p.MessageId] {
				again = append(again, p)
			}
		}
		err = ps.publisher.publish(ctx, ps.topo.exchange, queue, topic, again)
	}
	if err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	return nil
}

// redeclare declares the topology again on the current publisher connection.
func (ps *PubSub) redeclare(ctx context.Context) error {
	ch, cn, err := ps.pubConn.channel(ctx)
	if err != nil {
		return err
	}
	defer ps.pubConn.release(ch, cn)
	return ps.topo.declare(ch)
}

// PublishDelayed implements pubsub.Publisher: the messages wait in the wait queues (one or
// more hops, see doc.go) and the redelivery router forwards them when due.
func (ps *PubSub) PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...*pubsub.Message) error {
	if delay <= 0 {
		return ps.Publish(ctx, topic, msgs...)
	}
	if _, err := ps.destination("publish delayed", topic); err != nil {
		return err
	}
	now := time.Now()
	tier := ps.topo.tierFor(delay)
	pubs := make([]amqp.Publishing, len(msgs))
	for i, m := range msgs {
		if m.ID == "" {
			m.ID = newID()
		}
		pubs[i] = newPublishing(m, topic, now)
		pubs[i].Headers[hdrStage] = stageWait
		pubs[i].Headers[hdrDeliverAt] = now.Add(delay).UnixMilli()
	}
	if err := ps.publisher.publish(ctx, ps.topo.exchange, ps.topo.waitQueue(tier), "wait", pubs); err != nil {
		return fmt.Errorf("publish delayed to %s: %w", topic, err)
	}
	return nil
}

func (ps *PubSub) destination(op, topic string) (string, error) {
	if ps.closed.Load() {
		return "", fmt.Errorf("%s to %s: %w", op, topic, pubsub.ErrClosed)
	}
	queue, ok := ps.topo.queues[topic]
	if !ok {
		return "", fmt.Errorf("%s to %s: %w", op, topic, pubsub.ErrUnroutable)
	}
	return queue, nil
}

// Check implements pubsub.PubSub: nil while the publisher connection is up (or can be
// re-established now) and the broker does not block it, else an error wrapping
// pubsub.ErrUnavailable. A blocked connection is reachable, but every publish on it waits
// (until its context ends) for an alarm only the broker's operator can clear.
func (ps *PubSub) Check(ctx context.Context) error {
	if ps.closed.Load() {
		return fmt.Errorf("check: %w", pubsub.ErrClosed)
	}
	if err := ps.pubConn.check(ctx); err != nil {
		return fmt.Errorf("check rabbitmq: %w", err)
	}
	return nil
}

// Close implements pubsub.PubSub. Subscriptions and Run must have returned.
func (ps *PubSub) Close() error {
	ps.closeOnce.Do(func() {
		ps.closed.Store(true)
		// Connections first: closing them ends the publishes still waiting on the broker.
		ps.pubConn.close()
		ps.publisher.close()
		ps.subConn.close()
	})
	return nil
}

// Run routes the redelivery queue (redelivery with backoff, delayed publish, parking) and, when
// a ParkFunc is configured, hands parked messages to it. It blocks until ctx is done, drains,
// and returns nil; it returns an error only when the PubSub is closed under it.
func (ps *PubSub) Run(ctx context.Context) error {
	if ps.closed.Load() {
		return fmt.Errorf("run: %w", pubsub.ErrClosed)
	}
	var (
		wg   sync.WaitGroup
		errs = make([]error, 2)
	)
	wg.Go(func() {
		r := &router{ps: ps}
		errs[0] = ps.consume(ctx, ps.topo.redelivery, "redelivery", ps.cfg.RedeliveryPoolSize, r.route)
	})
	if ps.cfg.ParkFunc != nil {
		wg.Go(func() {
			k := &parkKeeper{ps: ps, park: ps.cfg.ParkFunc, failures: map[string]int{}}
			errs[1] = ps.consume(ctx, ps.topo.parked, "parked", 1, k.handle)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// DrainParked takes up to limit messages from the parked queue and hands each to fn, acking it
// only once fn returns nil; it stops at the first error (the message stays parked). It is the
// admin's way to list or move parked messages when no ParkFunc is configured (for example fn
// stores them, or calls Parked.Republish). It returns the number of messages fn accepted.
func (ps *PubSub) DrainParked(ctx context.Context, limit int, fn pubsub.ParkFunc) (int, error) {
	if ps.closed.Load() {
		return 0, fmt.Errorf("drain parked: %w", pubsub.ErrClosed)
	}
	ch, cn, err := ps.subConn.channel(ctx)
	if err != nil {
		return 0, fmt.Errorf("drain parked: %w", err)
	}
	defer ps.subConn.release(ch, cn)
	n := 0
	for n < limit {
		d, ok, err := ch.Get(ps.topo.parked, false)
		if err != nil {
			return n, fmt.Errorf("drain parked: get: %w: %w", pubsub.ErrUnavailable, err)
		}
		if !ok {
			return n, nil
		}
		if err := fn(ctx, parked(&d)); err != nil {
			_ = d.Nack(false, true)
			return n, fmt.Errorf("drain parked: message %s: %w", d.MessageId, err)
		}
		if err := d.Ack(false); err != nil {
			return n, fmt.Errorf("drain parked: ack %s: %w: %w", d.MessageId, pubsub.ErrUnavailable, err)
		}
		n++
	}
	return n, nil
}

// internalPublish publishes a republication the package makes on its own, bounded by
// PublishTimeout.
func (ps *PubSub) internalPublish(ctx context.Context, queue, label string, pub amqp.Publishing) error {
	ctx, cancel := context.WithTimeout(ctx, ps.cfg.PublishTimeout)
	defer cancel()
	return ps.publisher.publish(ctx, ps.topo.exchange, queue, label, []amqp.Publishing{pub})
}

// parkKeeper is the consumer of the parked queue: it acks a parked message only once the
// ParkFunc stored it, retrying with the redelivery schedule in between.
type parkKeeper struct {
	ps       *PubSub
	park     pubsub.ParkFunc
	mu       sync.Mutex
	failures map[string]int // message ID → consecutive ParkFunc failures
}

func (k *parkKeeper) handle(subCtx, handlerCtx context.Context, d *amqp.Delivery) {
	p := parked(d)
	err := k.park(handlerCtx, p)
	k.mu.Lock()
	if err == nil {
		delete(k.failures, d.MessageId)
	} else {
		k.failures[d.MessageId]++
	}
	n := k.failures[d.MessageId]
	k.mu.Unlock()
	if err == nil {
		_ = d.Ack(false)
		return
	}
	r := k.ps.cfg.Redelivery
	wait := loop.Backoff(n, r.InitialInterval, r.Multiplier, r.MaxInterval)
	k.ps.log.ErrorContext(handlerCtx, "park message failed; retrying", "topic", p.Topic, "message_id", d.MessageId,
		"retry_in", wait, "error", err)
	loop.Sleep(subCtx, wait)
	_ = d.Nack(false, true)
}

// removeTopology deletes the prefix's queues and exchange (tests and benchmarks).
func (ps *PubSub) removeTopology(ctx context.Context) error {
	ch, cn, err := ps.subConn.channel(ctx)
	if err != nil {
		return err
	}
	defer ps.subConn.release(ch, cn)
	return ps.topo.remove(ch)
}
