package mempubsub

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
)

// Defaults for Config.
const (
	DrainTimeoutDefault = 30 * time.Second
	// HistoryLimit bounds Parked.History: the most recent lines are kept.
	HistoryLimit = 20
	// historyLineLimit bounds one history line, in bytes.
	historyLineLimit = 512
)

// Config configures an instance. The zero value works: a private broker, Orb's redelivery
// defaults, parked messages kept in the broker.
type Config struct {
	// Broker is shared by the instances that must see the same queues; nil means a private one.
	Broker *Broker
	// Redelivery is the retry schedule; zero fields take the contract's defaults.
	Redelivery pubsub.RedeliveryConfig
	// ParkFunc receives parked messages; nil keeps them in the Broker.
	ParkFunc pubsub.ParkFunc
	// DrainTimeout is how long in-flight handlers keep a live context after their subscription
	// is cancelled (DrainTimeoutDefault).
	DrainTimeout time.Duration
	// Logger receives the component's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
}

// PubSub is an instance attached to a Broker. It is safe for concurrent use.
type PubSub struct {
	broker     *Broker
	redelivery pubsub.RedeliveryConfig
	park       pubsub.ParkFunc
	drain      time.Duration
	log        *slog.Logger
	metrics    *metrics
	closed     atomic.Bool
}

var _ pubsub.PubSub = (*PubSub)(nil)

// New returns an instance.
func New(cfg Config) (*PubSub, error) {
	if cfg.DrainTimeout < 0 {
		return nil, fmt.Errorf("mempubsub: drain timeout %s is negative", cfg.DrainTimeout)
	}
	broker := cfg.Broker
	if broker == nil {
		broker = NewBroker()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PubSub{
		broker:     broker,
		redelivery: cfg.Redelivery.WithDefaults(),
		park:       cfg.ParkFunc,
		drain:      cmp.Or(cfg.DrainTimeout, DrainTimeoutDefault),
		log:        log,
		metrics:    newMetrics(cfg.Registerer),
	}, nil
}

// Publish implements pubsub.Publisher. A message is "confirmed" once it is in the queue.
func (p *PubSub) Publish(ctx context.Context, topic string, msgs ...*pubsub.Message) error {
	return p.publish(ctx, topic, 0, msgs)
}

// PublishDelayed implements pubsub.Publisher.
func (p *PubSub) PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...*pubsub.Message) error {
	return p.publish(ctx, topic, delay, msgs)
}

func (p *PubSub) publish(ctx context.Context, topic string, delay time.Duration, msgs []*pubsub.Message) error {
	if p.closed.Load() {
		return fmt.Errorf("publish to %s: %w", topic, pubsub.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	q, ok := p.broker.queues[topic]
	if !ok {
		return fmt.Errorf("publish to %s: %w", topic, pubsub.ErrUnroutable)
	}
	readyAt := time.Now().Add(max(delay, 0))
	for _, m := range msgs {
		if m.ID == "" {
			m.ID = newID()
		}
		q.push(&item{
			msg: pubsub.Message{
				ID:      m.ID,
				Headers: maps.Clone(m.Headers),
				Body:    slices.Clone(m.Body),
				Attempt: 1,
			},
			readyAt: readyAt,
		})
	}
	p.metrics.published.WithLabelValues(topic).Add(float64(len(msgs)))
	return nil
}

// Subscribe implements pubsub.Subscriber.
func (p *PubSub) Subscribe(ctx context.Context, topic string, poolSize int, handler pubsub.Handler) error {
	if p.closed.Load() {
		return fmt.Errorf("subscribe to %s: %w", topic, pubsub.ErrClosed)
	}
	q, ok := p.broker.queues[topic]
	if !ok {
		return fmt.Errorf("subscribe to %s: %w", topic, pubsub.ErrUnroutable)
	}
	if poolSize < 1 {
		return fmt.Errorf("subscribe to %s: pool size %d is less than 1", topic, poolSize)
	}
	// Handlers outlive ctx by up to the drain timeout.
	handlerCtx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()

	var wg sync.WaitGroup
	for range poolSize {
		wg.Go(func() {
			for {
				it := q.next(ctx)
				if it == nil {
					return
				}
				p.deliver(ctx, handlerCtx, q, topic, it, handler)
			}
		})
	}
	<-ctx.Done()
	drainTimer := time.AfterFunc(p.drain, cancelHandlers)
	wg.Wait()
	drainTimer.Stop()
	return nil
}

// deliver runs the handler on one message and settles it: done, back in the queue (with or
// without counting an attempt), or parked.
func (p *PubSub) deliver(subCtx, handlerCtx context.Context, q *queue, topic string, it *item, handler pubsub.Handler) {
	msg := it.msg
	msg.Topic = topic
	msg.Headers = maps.Clone(it.msg.Headers)
	msg.Body = slices.Clone(it.msg.Body)
	p.metrics.delivered.WithLabelValues(topic).Inc()
	start := time.Now()
	err := call(handlerCtx, handler, &msg)
	p.metrics.handlerSeconds.WithLabelValues(topic).Observe(time.Since(start).Seconds())
	if err == nil {
		p.metrics.acked.WithLabelValues(topic).Inc()
		return
	}
	attempt := it.msg.Attempt
	if subCtx.Err() != nil && handlerCtx.Err() != nil {
		// Interrupted by the drain timeout: not the message's fault.
		it.readyAt = time.Now()
		q.push(it)
		return
	}
	p.metrics.nacked.WithLabelValues(topic).Inc()
	it.history = appendHistory(it.history, attempt, err)
	switch {
	case pubsub.IsPermanent(err):
		p.parkMessage(handlerCtx, topic, it, err.Error())
	case attempt >= p.redelivery.MaxAttempts:
		p.parkMessage(handlerCtx, topic, it, fmt.Sprintf("failed %d attempts, last: %s", attempt, err))
	default:
		delay := p.redelivery.Delay(attempt)
		p.log.DebugContext(handlerCtx, "redelivering message", "topic", topic, "message_id", msg.ID,
			"attempt", attempt, "delay", delay, "error", err)
		it.msg.Attempt = attempt + 1
		it.readyAt = time.Now().Add(delay)
		q.push(it)
		p.metrics.redelivered.WithLabelValues(topic, delay.String()).Inc()
		p.metrics.published.WithLabelValues(topic).Inc()
	}
}

// parkMessage hands the message to the ParkFunc, retrying with the redelivery schedule until it
// succeeds or the handler context ends; what cannot be handed over stays in the Broker.
func (p *PubSub) parkMessage(ctx context.Context, topic string, it *item, reason string) {
	parked := pubsub.Parked{
		Message:  it.msg,
		Topic:    topic,
		Reason:   reason,
		Attempts: it.msg.Attempt,
		History:  it.history,
		ParkedAt: time.Now(),
	}
	parked.Message.Attempt = 0
	p.metrics.parked.WithLabelValues(topic).Inc()
	p.log.WarnContext(ctx, "message parked", "topic", topic, "message_id", it.msg.ID,
		"attempts", parked.Attempts, "reason", reason)
	if p.park == nil {
		p.broker.keepParked(parked)
		return
	}
	for n := 1; ; n++ {
		err := p.park(ctx, parked)
		if err == nil {
			return
		}
		wait := loop.Backoff(n, p.redelivery.InitialInterval, p.redelivery.Multiplier, p.redelivery.MaxInterval)
		p.log.ErrorContext(ctx, "park message failed; retrying", "topic", topic, "message_id", it.msg.ID,
			"retry_in", wait, "error", err)
		if !loop.Sleep(ctx, wait) {
			p.broker.keepParked(parked)
			return
		}
	}
}

// Check implements pubsub.PubSub: an open instance is always healthy.
func (p *PubSub) Check(context.Context) error {
	if p.closed.Load() {
		return fmt.Errorf("check: %w", pubsub.ErrClosed)
	}
	return nil
}

// Close implements pubsub.PubSub. The Broker and its messages stay for other instances.
func (p *PubSub) Close() error {
	p.closed.Store(true)
	return nil
}

// call runs the handler and turns a panic into an error, so that a bad message cannot take the
// process down.
func call(ctx context.Context, h pubsub.Handler, msg *pubsub.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, msg)
}

func appendHistory(history []string, attempt int, err error) []string {
	line := fmt.Sprintf("%s attempt %d: %s", time.Now().UTC().Format(time.RFC3339Nano), attempt, err)
	if len(line) > historyLineLimit {
		line = line[:historyLineLimit]
	}
	history = append(history, line)
	if len(history) > HistoryLimit {
		history = slices.Delete(history, 0, len(history)-HistoryLimit)
	}
	return history
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(errors.Join(errors.New("crypto/rand failed"), err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
