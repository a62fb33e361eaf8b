package amqppubsub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/secret"
)

// connector owns the connections of one role (publisher or consumer) and hands out channels,
// opening a new connection when the current ones hold MaxConnectionChannels channels or have
// died. It runs no goroutine of its own but one per connection that keeps what the broker says
// of blocking it (the library hands those notices to a channel that must be read, and closes it
// with the connection): a dead connection is noticed by whoever asks for a channel next
// (publishers, subscription loops, Check), who then dials again, at most once per backoff
// interval. Between attempts, requests fail fast with pubsub.ErrUnavailable.
//
// Only dialing happens under the lock, and a dial ends with its caller's context or
// DialTimeout, whichever comes first. Requests to a live connection (channel.open,
// channel.close, connection.close) are made outside it: a broker can keep a connection open and
// stop answering (RabbitMQ stops reading a publishing connection under a memory or disk alarm),
// and such a request then waits until the broker answers or the connection dies.
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

	// lock guards the fields below: a channel rather than a mutex, so that a caller waiting
	// behind another's dial can give up when its context ends.
	lock     chan struct{}
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
	// blocked is the reason the broker gave when it last said it blocks this connection
	// (connection.blocked: RabbitMQ's memory or disk alarm), nil once it said it unblocked.
	// RabbitMQ holds a blocked connection's publishes unread until the alarm clears.
	blocked atomic.Pointer[string]
}

// watchBlocked keeps cn.blocked as the broker's notices on blocks say, until the library closes
// blocks with the connection.
func (c *connector) watchBlocked(cn *conn, blocks <-chan amqp.Blocking) {
	gauge := c.metrics.blocked.WithLabelValues(c.role)
	for b := range blocks {
		if b.Active {
			reason := b.Reason
			if cn.blocked.Swap(&reason) == nil {
				gauge.Inc()
			}
			c.log.Warn("the broker blocks this connection: publishes wait until it unblocks it", "reason", reason)
			continue
		}
		if cn.blocked.Swap(nil) != nil {
			gauge.Dec()
			c.log.Info("the broker unblocked this connection")
		}
	}
	if cn.blocked.Swap(nil) != nil {
		gauge.Dec()
	}
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
		lock:        make(chan struct{}, 1),
	}
	m.connectionUp.WithLabelValues(role).Set(0)
	return c
}

// enter takes the lock, or fails with an error wrapping pubsub.ErrUnavailable once ctx ends.
func (c *connector) enter(ctx context.Context) error {
	select { // a free lock wins over an ended context
	case c.lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case c.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the %s connection: %w: %w", c.role, pubsub.ErrUnavailable, ctx.Err())
	}
}

// enterAlways takes the lock for bookkeeping that must not be skipped; it waits at most for a
// dial in progress.
func (c *connector) enterAlways() { c.lock <- struct{}{} }

func (c *connector) leave() { <-c.lock }

// channel opens a channel on a connection with room, dialing when there is none. It fails fast
// with an error wrapping pubsub.ErrUnavailable while the broker is unreachable.
func (c *connector) channel(ctx context.Context) (*amqp.Channel, *conn, error) {
	for {
		cn, err := c.reserve(ctx)
		if err != nil {
			return nil, nil, err
		}
		ch, err := cn.c.Channel()
		if err == nil {
			return ch, cn, nil
		}
		c.enterAlways()
		cn.channels--
		if !cn.c.IsClosed() { // else pruned on the next turn
			// The broker's channel_max is lower than MaxConnectionChannels.
			c.log.WarnContext(ctx, "broker refused a channel; using a new connection", "channels", cn.channels, "error", err)
			cn.full = true
		}
		c.leave()
	}
}

// reserve counts one more channel on a connection with room, dialing when there is none.
func (c *connector) reserve(ctx context.Context) (*conn, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	defer c.leave()
	if c.closed {
		return nil, pubsub.ErrClosed
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
			return nil, err
		}
	}
	cn.channels++
	return cn, nil
}

// release closes ch and frees its slot on cn. A connection left without channels is closed
// unless it is the newest, so that connections opened for a burst of channels go away.
func (c *connector) release(ch *amqp.Channel, cn *conn) {
	_ = ch.Close() // fails only when already closed
	c.enterAlways()
	cn.channels--
	surplus := false
	if cn.channels == 0 && len(c.conns) >= 2 && c.conns[len(c.conns)-1] != cn {
		if i := slices.Index(c.conns, cn); i >= 0 {
			c.conns = slices.Delete(c.conns, i, i+1)
			c.metrics.connections.WithLabelValues(c.role).Set(float64(len(c.conns)))
			surplus = true
		}
	}
	c.leave()
	if surplus {
		c.closeConn(cn)
	}
}

// ensure makes sure the role has a live connection, dialing if the backoff allows.
func (c *connector) ensure(ctx context.Context) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	return c.ensureLocked(ctx)
}

func (c *connector) ensureLocked(ctx context.Context) error {
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

// check is ensure, and then an error wrapping pubsub.ErrUnavailable while the broker blocks a
// live connection of the role: a publish on it would wait until the broker unblocks it.
func (c *connector) check(ctx context.Context) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	defer c.leave()
	if err := c.ensureLocked(ctx); err != nil {
		return err
	}
	for _, cn := range c.conns {
		if reason := cn.blocked.Load(); reason != nil {
			return fmt.Errorf("the broker blocks the %s connection (%q): %w", c.role, *reason, pubsub.ErrUnavailable)
		}
	}
	return nil
}

// waitRetry sleeps until the next dial is allowed; false when ctx ended first.
func (c *connector) waitRetry(ctx context.Context) bool {
	if c.enter(ctx) != nil {
		return false
	}
	wait := time.Until(c.retryAt)
	c.leave()
	return loop.Sleep(ctx, wait)
}

// close closes the connections, which ends every request still waiting on them.
func (c *connector) close() {
	c.enterAlways()
	c.closed = true
	conns := c.conns
	c.conns = nil
	c.metrics.connections.WithLabelValues(c.role).Set(0)
	c.metrics.connectionUp.WithLabelValues(c.role).Set(0)
	c.leave()
	var wg sync.WaitGroup
	for _, cn := range conns {
		wg.Go(func() { c.closeConn(cn) })
	}
	wg.Wait()
}

// closeConn closes a connection nobody will use again. The broker gets DialTimeout to answer
// the close; then the socket is closed under whatever still waits on it.
func (c *connector) closeConn(cn *conn) {
	_ = cn.c.CloseDeadline(time.Now().Add(c.dialTimeout))
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

// dial opens a connection and declares the topology on it. The whole of it, handshake and
// declarations included, ends with ctx or after DialTimeout: the socket is closed under it.
func (c *connector) dial(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s: %w", secret.RedactURL(c.url), err)
	}
	// Set by the Dial hook below: until it is stopped, the end of ctx closes the socket.
	stop := func() bool { return true }
	props := amqp.NewConnectionProperties()
	props.SetClientConnectionName("anchord-" + c.role)
	ac, err := amqp.DialConfig(c.url, amqp.Config{
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Properties: props,
		Dial: func(network, addr string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			stop = context.AfterFunc(ctx, func() { _ = nc.Close() })
			return nc, nil
		},
		TLSClientConfig: c.tls,
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", secret.RedactURL(c.url), c.cause(ctx, err))
	}
	cn := &conn{c: ac, closes: ac.NotifyClose(make(chan *amqp.Error, 1))}
	go c.watchBlocked(cn, ac.NotifyBlocked(make(chan amqp.Blocking, 1)))
	ch, err := ac.Channel()
	if err != nil {
		_ = ac.Close()
		return nil, fmt.Errorf("open channel to declare topology: %w", c.cause(ctx, err))
	}
	err = c.declare(ch)
	_ = ch.Close()
	if err == nil && !stop() {
		err = errors.New("connection closed") // ctx ended as the declarations finished
	}
	if err != nil {
		_ = ac.Close()
		return nil, fmt.Errorf("declare topology: %w", c.cause(ctx, err))
	}
	return cn, nil
}

// cause adds ctx's error to err when ctx ended: the socket was closed because of it, and the
// library only reports the closed socket.
func (c *connector) cause(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return err
}
