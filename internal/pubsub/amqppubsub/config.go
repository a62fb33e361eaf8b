package amqppubsub

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/pubsub"
)

// QueueType selects the RabbitMQ queue implementation of every queue the package declares.
type QueueType string

// Queue types.
const (
	// QueueClassic is a classic queue, version 2 (x-queue-version: 2): one node, fsync'd
	// persistent messages.
	QueueClassic QueueType = "classic"
	// QueueQuorum is a replicated Raft queue.
	QueueQuorum QueueType = "quorum"
)

// Defaults for Config. Names in parentheses are the Orb parameters anchord keeps.
const (
	PrefixDefault = "anchord"
	// QueueTypeDefault is classic: on a single node it measured faster than quorum
	// (see doc.go, "Measurements").
	QueueTypeDefault = QueueClassic
	// PublisherChannelPoolSizeDefault (mq-publisher-channel-pool-size).
	PublisherChannelPoolSizeDefault = 25
	// MaxConnectionChannelsDefault (mq-max-connection-channels).
	MaxConnectionChannelsDefault = 1000
	// SubscriberChannelSlotsDefault: pool slots per AMQP channel. A pool of up to 64 shares one
	// channel with prefetch = pool size: it measured as fast as a channel per slot at pool 8
	// and 8–20 % faster at pool 25, with 25 times fewer channels (doc.go, "Measurements").
	SubscriberChannelSlotsDefault = 64
	// RedeliveryPoolSizeDefault is the number of concurrent redelivery routers per instance.
	RedeliveryPoolSizeDefault = 4
	DrainTimeoutDefault       = 30 * time.Second
	DialTimeoutDefault        = 5 * time.Second
	PublishTimeoutDefault     = 30 * time.Second
	ReconnectIntervalDefault  = 500 * time.Millisecond
	ReconnectMaxDefault       = 15 * time.Second
	// MaxWaitTiersDefault bounds the number of wait queues.
	MaxWaitTiersDefault = 32
)

// Config configures a PubSub. Zero fields take the defaults above, except URL.
type Config struct {
	// URL is the broker's AMQP URL (mq-url).
	URL string
	// Prefix names the exchange and prefixes every queue ("anchord" → exchange "anchord",
	// queues "anchord.operation", …). Instances that share a prefix share queues.
	Prefix string
	// Topics are the application topics; nil means pubsub.Topics.
	Topics []string
	// QueueType is the type of every declared queue. Changing it for an existing prefix fails
	// at startup (RabbitMQ cannot change a queue's type): delete the queues or use a new prefix.
	QueueType QueueType
	// Redelivery is the retry schedule; zero fields take the contract's defaults. The wait
	// queues are derived from it.
	Redelivery pubsub.RedeliveryConfig
	// ParkFunc receives parked messages from the parked queue (Run consumes it). Nil leaves
	// them in the parked queue, where DrainParked can take them later.
	ParkFunc pubsub.ParkFunc
	// PublisherChannelPoolSize is the number of pooled publisher channels, which is also the
	// number of Publish calls in flight at once (mq-publisher-channel-pool-size).
	PublisherChannelPoolSize int
	// MaxConnectionChannels is the number of channels after which a new connection is opened
	// (mq-max-connection-channels).
	MaxConnectionChannels int
	// SubscriberChannelSlots is the number of a subscription's pool slots that share one AMQP
	// channel; that channel's prefetch equals its slots. 1 gives each slot its own channel.
	SubscriberChannelSlots int
	// RedeliveryPoolSize is the number of concurrent redelivery routers Run starts.
	RedeliveryPoolSize int
	// DrainTimeout is how long in-flight handlers keep a live context after their
	// subscription is cancelled.
	DrainTimeout time.Duration
	// DialTimeout bounds one connection attempt.
	DialTimeout time.Duration
	// TLS, if set, is the client configuration of an amqps:// connection (trust.ClientConfig);
	// nil means the system's authorities.
	TLS *tls.Config
	// PublishTimeout bounds the publishes the package makes on its own (failure reports,
	// redelivery, parking); callers bound theirs with their context.
	PublishTimeout time.Duration
	// ReconnectInterval and ReconnectMax are the first and the longest wait between
	// connection attempts (doubling in between).
	ReconnectInterval time.Duration
	ReconnectMax      time.Duration
	// MaxWaitTiers bounds the number of wait queues derived from Redelivery.
	MaxWaitTiers int
	// Logger receives the component's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
}

// withDefaults returns c with defaults applied.
func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, PrefixDefault)
	if len(c.Topics) == 0 {
		c.Topics = pubsub.Topics
	}
	c.QueueType = cmp.Or(c.QueueType, QueueTypeDefault)
	c.Redelivery = c.Redelivery.WithDefaults()
	c.PublisherChannelPoolSize = cmp.Or(c.PublisherChannelPoolSize, PublisherChannelPoolSizeDefault)
	c.MaxConnectionChannels = cmp.Or(c.MaxConnectionChannels, MaxConnectionChannelsDefault)
	c.SubscriberChannelSlots = cmp.Or(c.SubscriberChannelSlots, SubscriberChannelSlotsDefault)
	c.RedeliveryPoolSize = cmp.Or(c.RedeliveryPoolSize, RedeliveryPoolSizeDefault)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DrainTimeoutDefault)
	c.DialTimeout = cmp.Or(c.DialTimeout, DialTimeoutDefault)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, PublishTimeoutDefault)
	c.ReconnectInterval = cmp.Or(c.ReconnectInterval, ReconnectIntervalDefault)
	c.ReconnectMax = cmp.Or(c.ReconnectMax, ReconnectMaxDefault)
	c.MaxWaitTiers = cmp.Or(c.MaxWaitTiers, MaxWaitTiersDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validate reports operator errors in a config with defaults applied.
func (c Config) validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("URL is empty"))
	} else if _, err := url.Parse(c.URL); err != nil {
		errs = append(errs, fmt.Errorf("URL: %w", err))
	}
	if c.QueueType != QueueClassic && c.QueueType != QueueQuorum {
		errs = append(errs, fmt.Errorf("queue type %q is neither %q nor %q", c.QueueType, QueueClassic, QueueQuorum))
	}
	for _, v := range []struct {
		name string
		n    int
	}{
		{"publisher channel pool size", c.PublisherChannelPoolSize},
		{"max connection channels", c.MaxConnectionChannels},
		{"subscriber channel slots", c.SubscriberChannelSlots},
		{"redelivery pool size", c.RedeliveryPoolSize},
		{"max wait tiers", c.MaxWaitTiers},
	} {
		if v.n < 1 {
			errs = append(errs, fmt.Errorf("%s %d is less than 1", v.name, v.n))
		}
	}
	for _, v := range []struct {
		name string
		d    time.Duration
	}{
		{"drain timeout", c.DrainTimeout},
		{"dial timeout", c.DialTimeout},
		{"publish timeout", c.PublishTimeout},
		{"reconnect interval", c.ReconnectInterval},
		{"reconnect max", c.ReconnectMax},
	} {
		if v.d < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", v.name, v.d))
		}
	}
	if c.Redelivery.Multiplier < 1 {
		errs = append(errs, fmt.Errorf("redelivery multiplier %g is less than 1", c.Redelivery.Multiplier))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("amqppubsub config: %w", err)
	}
	return nil
}
