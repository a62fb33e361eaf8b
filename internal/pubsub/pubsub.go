// Package pubsub is the publish/subscribe contract shared by the in-memory implementation
// (mempubsub, the fake for tests) and the RabbitMQ implementation (amqppubsub, cluster
// mode). It holds the types, the error classification a handler uses (nil, retryable error,
// Permanent) and the redelivery schedule; it does no I/O itself.
//
// Semantics every implementation MUST provide (checked by pubsubtest.Exercise):
//
//   - Publish returns nil only after the broker has durably accepted every message (publisher
//     confirms; an unroutable message is an error, not a silent drop).
//   - Each message of a topic is handled by exactly one subscriber across all subscriptions of
//     that topic (competing consumers), at least once.
//   - A handler returning nil acks the message. A handler returning an error has it redelivered:
//     the first rejection at once, later ones after Backoff(attempt), until MaxAttempts
//     deliveries; then the message is parked. A handler returning Permanent(err) parks it at once.
//   - A parked message is never delivered again by the subscription; it is handed to the
//     configured ParkFunc (the dead-letter store) with its reason and attempt history.
//   - Message.Attempt is maintained by the implementation in its own header, starting at 1.
//   - A subscription with pool size N runs up to N handlers concurrently; a handler that has
//     not returned never blocks delivery of the next message to another pool slot.
//   - When the context passed to Subscribe is cancelled, the subscription stops taking new
//     deliveries, waits for in-flight handlers to return (they keep a live context until the
//     drain timeout), and only then does Subscribe return. A handler that fails only because
//     its context was cancelled by the drain timeout has its message put back without counting
//     an attempt.
//   - PublishDelayed MUST NOT deliver a message before delay has passed since the call began
//     (brokers that count in whole milliseconds may be a few milliseconds early), and MUST keep
//     each message's delay on its own: a message is not held behind one with a longer delay
//     published before it. Deliveries are ordered by nothing else; in particular an immediate
//     message published after a delayed one may be delivered after it, since the delay can run
//     out while the publishes are confirmed. The suite expects each delayed message within
//     Features.Slack of its due time.
//   - Publish to a topic that has no queue fails with an error wrapping ErrUnroutable; while the
//     broker is unreachable Publish fails fast with an error wrapping ErrUnavailable, and the
//     caller retries (a message whose confirm was lost may then be delivered twice: handlers
//     MUST be idempotent). After Close every operation fails with ErrClosed.
//   - Check reports nil while the broker is reachable and an error wrapping ErrUnavailable
//     while it is not (the health endpoint maps it to 503).
//
// A parked message is retried by publishing it again (Parked.Republish); its attempt count
// starts again at 1.
package pubsub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/loop"
)

// Topics used by anchord. Implementations create a durable queue for each.
const (
	TopicOperation      = "operation"
	TopicAnchor         = "anchor"
	TopicAnchorLinkset  = "anchor_linkset"
	TopicActivityInbox  = "activity.inbox"
	TopicActivityOutbox = "activity.outbox"
)

// Topics lists every application topic, in declaration order.
var Topics = []string{TopicOperation, TopicAnchor, TopicAnchorLinkset, TopicActivityInbox, TopicActivityOutbox}

// Message is one unit of publication.
type Message struct {
	// ID identifies the message across redeliveries; Publish fills it with a random UUID when empty.
	ID string
	// Headers are application metadata. Keys starting with "x-" are reserved for implementations.
	Headers map[string]string
	// Body is the payload; the contract does not interpret it.
	Body []byte
	// Attempt is the 1-based delivery attempt, set by the implementation on delivery. Ignored
	// on publish.
	Attempt int
	// Topic is the topic the message was delivered from, set on delivery.
	Topic string
}

// Handler processes one delivered message. See the package doc for the meaning of its result.
// The context stays alive while the subscription drains and is cancelled after the drain timeout.
type Handler func(ctx context.Context, msg *Message) error

// Publisher publishes messages.
type Publisher interface {
	// Publish sends the messages to topic and returns once every one is confirmed by the broker.
	Publish(ctx context.Context, topic string, msgs ...*Message) error
	// PublishDelayed is Publish with delivery deferred by at least delay (see the package doc
	// for what that orders).
	PublishDelayed(ctx context.Context, topic string, delay time.Duration, msgs ...*Message) error
}

// Subscriber consumes messages.
type Subscriber interface {
	// Subscribe consumes topic with poolSize concurrent handlers until ctx is done, then drains
	// in-flight handlers and returns nil. It returns an error only when the subscription cannot
	// be established or is lost for good.
	Subscribe(ctx context.Context, topic string, poolSize int, handler Handler) error
}

// PubSub is both halves plus lifecycle.
type PubSub interface {
	Publisher
	Subscriber
	// Check reports whether the broker is reachable: nil, or an error wrapping ErrUnavailable
	// (or ErrClosed after Close). It never blocks longer than ctx allows.
	Check(ctx context.Context) error
	// Close releases connections. Subscriptions must have returned first.
	Close() error
}

// Parked describes a message that exhausted its attempts or failed permanently.
type Parked struct {
	Message  Message
	Topic    string
	Reason   string
	Attempts int
	// History holds one line per failed attempt ("attempt 3: <error>"), oldest first, bounded by
	// the implementation.
	History  []string
	ParkedAt time.Time
}

// Republish publishes the parked message again to its original topic, keeping its ID and
// headers, for an admin "retry" of a dead-lettered message. Delivery starts again at attempt 1.
func (p Parked) Republish(ctx context.Context, pub Publisher) error {
	msg := p.Message
	msg.Attempt = 0
	msg.Topic = ""
	if err := pub.Publish(ctx, p.Topic, &msg); err != nil {
		return fmt.Errorf("republish parked message %s to %s: %w", p.Message.ID, p.Topic, err)
	}
	return nil
}

// ParkFunc stores a parked message durably (the dead-letter store). It returns nil only once the
// record is committed; implementations keep the message until then.
type ParkFunc func(ctx context.Context, p Parked) error

// RedeliveryConfig is the retry schedule, with Orb's parameter names.
type RedeliveryConfig struct {
	// MaxAttempts is the number of deliveries after which a failing message is parked
	// (mq-redelivery-max-attempts).
	MaxAttempts int
	// InitialInterval is the wait before the second redelivery (mq-redelivery-initial-interval).
	InitialInterval time.Duration
	// Multiplier grows the wait per attempt (mq-redelivery-multiplier).
	Multiplier float64
	// MaxInterval caps the wait (mq-redelivery-max-interval).
	MaxInterval time.Duration
}

// Defaults for RedeliveryConfig, from Orb's server defaults.
const (
	MaxAttemptsDefault     = 30
	InitialIntervalDefault = 2 * time.Second
	MultiplierDefault      = 1.5
	MaxIntervalDefault     = time.Minute
)

// WithDefaults returns c with zero fields set to their defaults.
func (c RedeliveryConfig) WithDefaults() RedeliveryConfig {
	c.MaxAttempts = cmp.Or(c.MaxAttempts, MaxAttemptsDefault)
	c.InitialInterval = cmp.Or(c.InitialInterval, InitialIntervalDefault)
	c.Multiplier = cmp.Or(c.Multiplier, MultiplierDefault)
	c.MaxInterval = cmp.Or(c.MaxInterval, MaxIntervalDefault)
	return c
}

// Validate rejects a schedule that cannot be followed: negative values, or a multiplier that
// would shrink the wait.
func (c RedeliveryConfig) Validate() error {
	if c.MaxAttempts < 0 || c.InitialInterval < 0 || c.MaxInterval < 0 {
		return errors.New("redelivery: negative attempts or interval")
	}
	if c.Multiplier != 0 && c.Multiplier < 1 {
		return errors.New("redelivery: multiplier below 1")
	}
	return nil
}

// Delay returns the wait before redelivering a message whose delivery number failed has just
// failed (1-based): the first rejection is redelivered at once; rejection n ≥ 2 waits
// InitialInterval × Multiplier^(n−2), capped at MaxInterval. In Orb's words: with r
// redeliveries so far, the wait is 0 for r = 0 and initial × multiplier^(r−1) after that.
func (c RedeliveryConfig) Delay(failed int) time.Duration {
	if failed <= 1 {
		return 0
	}
	return loop.Backoff(failed-1, c.InitialInterval, c.Multiplier, c.MaxInterval)
}

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return "permanent: " + e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the subscription parks the message at once instead of retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err (or an error it wraps) was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// ErrUnavailable is wrapped by Publish when the broker cannot be reached or did not confirm.
// The HTTP API maps it to 503.
var ErrUnavailable = errors.New("message broker unavailable")

// ErrUnroutable is wrapped by Publish when no queue exists for the topic (AMQP: the broker
// returned the mandatory message). It is a configuration error, not worth retrying.
var ErrUnroutable = errors.New("message unroutable: no queue for topic")

// ErrClosed is returned by operations on a closed PubSub.
var ErrClosed = errors.New("pubsub closed")
