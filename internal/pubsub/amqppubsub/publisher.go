package amqppubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/pubsub"
)

// confirmWindow is the number of messages one Publish call sends before it waits for their
// confirms; it is also the buffer of a channel's return notifications, so that the library never
// has to drop a basic.return (it abandons a blocked notification after a timeout).
const confirmWindow = 256

// publisher is the pool of publisher channels, each in confirm mode. A Publish call holds one
// channel for its duration, so the pool size bounds concurrent publishes; a call that finds the
// pool busy waits for a channel, bounded by its context.
//
// The exchange with the broker runs on a goroutine of its own, which the caller waits for only
// until its context ends: opening a channel, enabling confirms and closing a channel are
// requests the library cannot abandon, and a broker that stopped reading the connection never
// answers them. Such a goroutine keeps its pool slot until the broker answers or the connection
// dies; close, after the connector closed the connections, waits for it.
type publisher struct {
	conn    *connector
	tokens  chan struct{}    // one per channel the pool may hold
	idle    chan *pubChannel // open channels not in use
	metrics *metrics

	mu       sync.Mutex
	closing  bool
	inFlight sync.WaitGroup // exchanges with the broker, their callers possibly gone
}

type pubChannel struct {
	ch      *amqp.Channel
	cn      *conn
	returns chan amqp.Return // buffered (confirmWindow); closed by the library with the channel
}

func newPublisher(conn *connector, size int, m *metrics) *publisher {
	p := &publisher{
		conn:    conn,
		tokens:  make(chan struct{}, size),
		idle:    make(chan *pubChannel, size),
		metrics: m,
	}
	for range size {
		p.tokens <- struct{}{}
	}
	return p
}

// publish sends pubs to exchange with routing key key, mandatory and persistent, and returns
// once the broker confirmed every one. label is the metrics' topic label.
func (p *publisher) publish(ctx context.Context, exchange, key, label string, pubs []amqp.Publishing) error {
	select {
	case <-p.tokens:
	case <-ctx.Done():
		return fmt.Errorf("wait for a publisher channel: %w: %w", pubsub.ErrUnavailable, ctx.Err())
	}
	return p.detach(ctx, func() error {
		defer func() { p.tokens <- struct{}{} }()
		return p.exchange(ctx, exchange, key, label, pubs)
	})
}

// detach runs fn on its own goroutine and waits for it until ctx ends.
func (p *publisher) detach(ctx context.Context, fn func() error) error {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return pubsub.ErrClosed
	}
	p.inFlight.Add(1)
	p.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer p.inFlight.Done()
		done <- fn()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	select {
	case err := <-done: // it finished as ctx ended: its result stands
		return err
	default:
		return fmt.Errorf("no answer from the broker: %w: %w", pubsub.ErrUnavailable, ctx.Err())
	}
}

// exchange publishes pubs on a pooled channel; the caller holds a token.
func (p *publisher) exchange(ctx context.Context, exchange, key, label string, pubs []amqp.Publishing) error {
	pc, err := p.acquire(ctx)
	if err != nil {
		p.metrics.publishFailed.WithLabelValues(label).Add(float64(len(pubs)))
		return err
	}
	healthy := false
	defer func() { p.putBack(pc, healthy) }()

	for len(pubs) > 0 {
		n := min(len(pubs), confirmWindow)
		if err := p.publishWindow(ctx, pc, exchange, key, label, pubs[:n]); err != nil {
			var unroutable *unroutableError
			healthy = errors.As(err, &unroutable)
			p.metrics.publishFailed.WithLabelValues(label).Add(float64(len(pubs)))
			return err
		}
		pubs = pubs[n:]
	}
	healthy = true
	return nil
}

// unroutableError reports messages the broker returned.
type unroutableError struct {
	key   string
	ids   []string
	reply string
}

func (e *unroutableError) Error() string {
	return fmt.Sprintf("broker returned %d message(s) for routing key %s (%s): %v", len(e.ids), e.key, e.reply, e.ids)
}
func (e *unroutableError) Unwrap() error { return pubsub.ErrUnroutable }

func (p *publisher) publishWindow(ctx context.Context, pc *pubChannel, exchange, key, label string, pubs []amqp.Publishing) error {
	confirms := make([]*amqp.DeferredConfirmation, 0, len(pubs))
	for i := range pubs {
		p.metrics.published.WithLabelValues(label).Inc()
		dc, err := pc.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false, pubs[i])
		if err != nil {
			return fmt.Errorf("publish to %s: %w: %w", key, pubsub.ErrUnavailable, err)
		}
		confirms = append(confirms, dc)
	}
	for _, dc := range confirms {
		// Always bounded by ctx: a confirm can be lost with its channel (amqp091-go #182).
		ack, err := dc.WaitContext(ctx)
		if err != nil {
			return fmt.Errorf("wait for confirm from %s: %w: %w", key, pubsub.ErrUnavailable, err)
		}
		if !ack {
			if pc.ch.IsClosed() {
				return fmt.Errorf("publish to %s: channel closed before confirm: %w", key, pubsub.ErrUnavailable)
			}
			return fmt.Errorf("publish to %s: broker nacked the message: %w", key, pubsub.ErrUnavailable)
		}
	}
	// The broker sends basic.return before the basic.ack of the same message and the library
	// hands both over in order from one reader, so every return of this window is buffered.
	var returned *unroutableError
	for {
		select {
		case r, ok := <-pc.returns:
			if !ok {
				return fmt.Errorf("publish to %s: channel closed: %w", key, pubsub.ErrUnavailable)
			}
			if returned == nil {
				returned = &unroutableError{key: key, reply: r.ReplyText}
			}
			returned.ids = append(returned.ids, r.MessageId)
			continue
		default:
		}
		break
	}
	if returned != nil {
		return returned
	}
	p.metrics.confirmed.WithLabelValues(label).Add(float64(len(pubs)))
	return nil
}

// acquire takes an idle channel or opens one; the caller holds a token.
func (p *publisher) acquire(ctx context.Context) (*pubChannel, error) {
	for {
		select {
		case pc := <-p.idle:
			if pc.ch.IsClosed() {
				p.conn.release(pc.ch, pc.cn)
				continue
			}
			return pc, nil
		default:
		}
		ch, cn, err := p.conn.channel(ctx)
		if err != nil {
			return nil, fmt.Errorf("open publisher channel: %w", err)
		}
		if err := ch.Confirm(false); err != nil {
			p.conn.release(ch, cn)
			return nil, fmt.Errorf("enable publisher confirms: %w: %w", pubsub.ErrUnavailable, err)
		}
		return &pubChannel{ch: ch, cn: cn, returns: ch.NotifyReturn(make(chan amqp.Return, confirmWindow))}, nil
	}
}

// putBack returns a channel to the pool, or closes it when its state is unknown (a publish
// failed midway: late confirms or returns must not be read by the next caller).
func (p *publisher) putBack(pc *pubChannel, healthy bool) {
	if healthy && !pc.ch.IsClosed() {
		select {
		case p.idle <- pc:
			return
		default:
		}
	}
	p.conn.release(pc.ch, pc.cn)
}

// close waits for the exchanges still running, which end once the connector closed the
// connections, and closes the idle channels.
func (p *publisher) close() {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	p.inFlight.Wait()
	for {
		select {
		case pc := <-p.idle:
			p.conn.release(pc.ch, pc.cn)
		default:
			return
		}
	}
}
