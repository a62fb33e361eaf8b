package amqppubsub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/secret"
)

// connector owns the connections of one role (publisher or consumer) and hands out channels,
// opening a new connection when the current ones hold MaxConnectionChannels channels or have
// died. It never runs a goroutine of its own: a dead connection is noticed by whoever asks for
// a channel next (publishers, subscription loops, Check), who then dials again, at most once per
// backoff interval. Between attempts, requests fail fast with pubsub.ErrUnavailable.
type connector struct {
	role        string
	url         string
	dialTimeout time.Duration
	tls         *tls.Config
	maxChannels int
	backoffMin  time.Duration
	backoffMax  time.Duration
	declare     func(*amqp.Channel) error
	log         *slog.Logger
	metrics     *metrics

	mu       sync.Mutex
	conns    []*conn // live connections, oldest first
	failures int     // consecutive failed dials
	retryAt  time.Time
	lastErr  error
	closed   bool
}

// conn is one AMQP connection and the number of channels open on it.
type conn struct {
	c        *amqp.Connection
	channels int
	closes   chan *amqp.Error // buffered: the library must never block on it
	full     bool             // the broker refused a channel: never ask this one again
}

func newConnector(role string, cfg Config, declare func(*amqp.Channel) error, m *metrics) *connector {
	c := &connector{
		role:        role,
		url:         cfg.URL,
		dialTimeout: cfg.DialTimeout,
		tls:         cfg.TLS,
		maxChannels: cfg.MaxConnectionChannels,
		backoffMin:  cfg.ReconnectInterval,
		backoffMax:  cfg.ReconnectMax,
		declare:     declare,
		log:         cfg.Logger.With("role", role),
		metrics:     m,
	}
	m.connectionUp.WithLabelValues(role).Set(0)
	return c
}

// channel opens a channel on a connection with room, dialing when there is none. It fails fast
// with an error wrapping pubsub.ErrUnavailable while the broker is unreachable.
func (c *connector) channel(ctx context.Context) (*amqp.Channel, *conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if c.closed {
			return nil, nil, pubsub.ErrClosed
		}
		c.pruneLocked()
		var cn *conn
		for i := len(c.conns) - 1; i >= 0; i-- {
			if !c.conns[i].full && c.conns[i].channels < c.maxChannels {
				cn = c.conns[i]
				break
			}
		}
		if cn == nil {
			var err error
			if cn, err = c.dialLocked(ctx); err != nil {
				return nil, nil, err
			}
		}
		ch, err := cn.c.Channel()
		if err != nil {
			if cn.c.IsClosed() {
				continue // pruned on the next turn
			}
			// The broker's channel_max is lower than MaxConnectionChannels.
			c.log.WarnContext(ctx, "broker refused a channel; using a new connection", "channels", cn.channels, "error", err)
			cn.full = true
			continue
		}
		cn.channels++
		return ch, cn, nil
	}
}

// release closes ch and frees its slot on cn. A connection left without channels is closed
// unless it is the newest, so that connections opened for a burst of channels go away.
func (c *connector) release(ch *amqp.Channel, cn *conn) {
	_ = ch.Close() // fails only when already closed
	c.mu.Lock()
	defer c.mu.Unlock()
	cn.channels--
	if cn.channels > 0 || len(c.conns) < 2 || c.conns[len(c.conns)-1] == cn {
		return
	}
	for i, other := range c.conns {
		if other == cn {
			c.conns = slices.Delete(c.conns, i, i+1)
			_ = cn.c.Close()
			c.metrics.connections.WithLabelValues(c.role).Set(float64(len(c.conns)))
			return
		}
	}
}

// ensure makes sure the role has a live connection, dialing if the backoff allows.
func (c *connector) ensure(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return pubsub.ErrClosed
	}
	c.pruneLocked()
	if len(c.conns) > 0 {
		return nil
	}
	_, err := c.dialLocked(ctx)
	return err
}

// waitRetry sleeps until the next dial is allowed; false when ctx ended first.
func (c *connector) waitRetry(ctx context.Context) bool {
	c.mu.Lock()
	wait := time.Until(c.retryAt)
	c.mu.Unlock()
	return loop.Sleep(ctx, wait)
}

func (c *connector) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, cn := range c.conns {
		_ = cn.c.Close()
	}
	c.conns = nil
	c.metrics.connections.WithLabelValues(c.role).Set(0)
	c.metrics.connectionUp.WithLabelValues(c.role).Set(0)
}

// pruneLocked forgets dead connections and logs why they died.
func (c *connector) pruneLocked() {
	live := c.conns[:0]
	for _, cn := range c.conns {
		if !cn.c.IsClosed() {
			live = append(live, cn)
			continue
		}
		var reason error = errors.New("closed")
		select {
		case e, ok := <-cn.closes:
			if ok && e != nil {
				reason = e
			}
		default:
		}
		c.log.Warn("broker connection lost", "error", reason)
	}
	clear(c.conns[len(live):])
	c.conns = live
	c.metrics.connections.WithLabelValues(c.role).Set(float64(len(c.conns)))
	if len(c.conns) == 0 {
		c.metrics.connectionUp.WithLabelValues(c.role).Set(0)
	}
}

// dialLocked opens a connection and declares the topology on it, unless the previous attempt
// failed less than one backoff interval ago.
func (c *connector) dialLocked(ctx context.Context) (*conn, error) {
	if wait := time.Until(c.retryAt); wait > 0 {
		return nil, fmt.Errorf("connect to %s (next attempt in %s, last error: %w): %w",
			secret.RedactURL(c.url), wait.Round(time.Millisecond), c.lastErr, pubsub.ErrUnavailable)
	}
	cn, err := c.dial(ctx)
	if err != nil {
		c.failures++
		c.retryAt = time.Now().Add(loop.Jitter(loop.Backoff(c.failures, c.backoffMin, 2, c.backoffMax), 0.2))
		c.lastErr = err
		c.metrics.dials.WithLabelValues(c.role, "error").Inc()
		var amqpErr *amqp.Error
		if errors.As(err, &amqpErr) && amqpErr.Code == amqp.PreconditionFailed {
			return nil, err // the broker's definitions disagree with ours: not transient
		}
		return nil, fmt.Errorf("%w: %w", pubsub.ErrUnavailable, err)
	}
	if c.failures > 0 {
		c.log.Info("broker connection restored", "url", secret.RedactURL(c.url), "failed_attempts", c.failures)
	}
	c.failures, c.lastErr, c.retryAt = 0, nil, time.Time{}
	c.conns = append(c.conns, cn)
	c.metrics.dials.WithLabelValues(c.role, "ok").Inc()
	c.metrics.connections.WithLabelValues(c.role).Set(float64(len(c.conns)))
	c.metrics.connectionUp.WithLabelValues(c.role).Set(1)
	return cn, nil
}

func (c *connector) dial(ctx context.Context) (*conn, error) {
	timeout := c.dialTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("dial %s: %w", secret.RedactURL(c.url), context.DeadlineExceeded)
	}
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("anchord-" + c.role)
	ac, err := amqp.DialConfig(c.url, amqp.Config{
		Heartbeat:       10 * time.Second,
		Locale:          "en_US",
		Dial:            amqp.DefaultDial(timeout),
		Properties:      props,
		TLSClientConfig: c.tls,
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", secret.RedactURL(c.url), err)
	}
	cn := &conn{c: ac, closes: ac.NotifyClose(make(chan *amqp.Error, 1))}
	ch, err := ac.Channel()
	if err != nil {
		_ = ac.Close()
		return nil, fmt.Errorf("open channel to declare topology: %w", err)
	}
	err = c.declare(ch)
	_ = ch.Close()
	if err != nil {
		_ = ac.Close()
		return nil, fmt.Errorf("declare topology: %w", err)
	}
	return cn, nil
}
