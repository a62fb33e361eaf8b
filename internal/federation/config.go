package federation

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/pubsub"
)

// Defaults of Config fields left zero. Orb's flag names where Orb has the setting.
const (
	// PageSizeDefault is --activitypub-page-size.
	PageSizeDefault = activity.PageSizeDefault
	// MaxClockSkewDefault is --max-clock-skew (Orb's default): how far a signed request's Date
	// may be from our clock.
	MaxClockSkewDefault = time.Minute
	// FollowAuthPolicyDefault is --follow-auth-policy: whom we accept as followers.
	FollowAuthPolicyDefault = PolicyAcceptAll
	// InviteWitnessAuthPolicyDefault is --invite-witness-auth-policy.
	InviteWitnessAuthPolicyDefault = PolicyAcceptAll
	// MaxInboxBytesDefault bounds an activity posted to the inbox: an anchor's Create carries
	// its linkset as data URIs, one item per operation of the batch.
	MaxInboxBytesDefault = activity.MaxActivityBytesDefault
	// PollIntervalDefault is how often the deliverer and the inbox processor look for due work
	// that no wake-up announced (retries coming due, a lost wake-up in a cluster).
	PollIntervalDefault = 2 * time.Second
	// DeliveryConcurrencyDefault bounds the POSTs in flight per instance (Orb's concurrent
	// HTTP requests of its outbox).
	DeliveryConcurrencyDefault = 10
	// InboxConcurrencyDefault bounds the activities handled at once per instance (Orb's
	// mq-inbox-pool).
	InboxConcurrencyDefault = 5
	// ClaimLimitDefault is how many work items one claim takes.
	ClaimLimitDefault = 50
	// HandlerTimeoutDefault bounds one run of an inbox handler (an anchor's Create fetches its
	// files from the origin).
	HandlerTimeoutDefault = 2 * time.Minute
	// DeliveredKeepDefault is how long a delivered delivery row is kept before expiry deletes it.
	DeliveredKeepDefault = 7 * 24 * time.Hour
	// SyncIntervalDefault is --sync-interval.
	SyncIntervalDefault = time.Minute
	// SyncAcceleratedIntervalDefault is --sync-accelerated-interval, used after a run that hit
	// --sync-max-activities.
	SyncAcceleratedIntervalDefault = 15 * time.Second
	// SyncMinActivityAgeDefault is --sync-min-activity-age (Orb's server default): younger
	// activities are left to live delivery.
	SyncMinActivityAgeDefault = 10 * time.Minute
	// SyncMaxActivitiesDefault is --sync-max-activities: activities queued per run.
	SyncMaxActivitiesDefault = 500
)

// Authorization policies of Follow and Invite (Orb's values).
const (
	PolicyAcceptAll  = "accept-all"
	PolicyAcceptList = "accept-list"
)

// ServicePath is the actor's path under the external endpoint.
const ServicePath = "/services/anchord"

// Config configures a Service.
type Config struct {
	// ExternalEndpoint is the domain's public base URL (--external-endpoint); the actor is
	// ExternalEndpoint + ServicePath. Required.
	ExternalEndpoint string
	// Key is the domain key: it signs our requests and its public half is the actor's key.
	// Required.
	Key ed25519.PrivateKey
	// InstanceID owns this instance's claims on deliveries and inbox rows. Required.
	InstanceID string

	PageSize                int
	MaxClockSkew            time.Duration
	FollowAuthPolicy        string
	InviteWitnessAuthPolicy string
	MaxInboxBytes           int64

	// Redelivery is the retry schedule of deliveries and inbox handlers (--mq-redelivery-*):
	// after MaxAttempts failed attempts the item is parked as a dead letter of kind activity.
	Redelivery          pubsub.RedeliveryConfig
	PollInterval        time.Duration
	DeliveryConcurrency int
	InboxConcurrency    int
	ClaimLimit          int
	HandlerTimeout      time.Duration
	DeliveredKeep       time.Duration

	SyncInterval            time.Duration
	SyncAcceleratedInterval time.Duration
	SyncMinActivityAge      time.Duration
	SyncMaxActivities       int

	// WitnessLog: the domain keeps a witness log, served at ExternalEndpoint + LogPath, and
	// WebFinger advertises it.
	WitnessLog bool

	// Broker, when set (cluster), carries wake-ups between instances on the activity topics.
	Broker pubsub.PubSub

	// NowFunc is the clock of published times, signature freshness and sync ages; nil means
	// time.Now.
	NowFunc    func() time.Time
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.ExternalEndpoint = strings.TrimRight(c.ExternalEndpoint, "/")
	c.PageSize = cmp.Or(c.PageSize, PageSizeDefault)
	c.MaxClockSkew = cmp.Or(c.MaxClockSkew, MaxClockSkewDefault)
	c.FollowAuthPolicy = cmp.Or(c.FollowAuthPolicy, FollowAuthPolicyDefault)
	c.InviteWitnessAuthPolicy = cmp.Or(c.InviteWitnessAuthPolicy, InviteWitnessAuthPolicyDefault)
	c.MaxInboxBytes = cmp.Or(c.MaxInboxBytes, MaxInboxBytesDefault)
	c.Redelivery = c.Redelivery.WithDefaults()
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.DeliveryConcurrency = cmp.Or(c.DeliveryConcurrency, DeliveryConcurrencyDefault)
	c.InboxConcurrency = cmp.Or(c.InboxConcurrency, InboxConcurrencyDefault)
	c.ClaimLimit = cmp.Or(c.ClaimLimit, ClaimLimitDefault)
	c.HandlerTimeout = cmp.Or(c.HandlerTimeout, HandlerTimeoutDefault)
	c.DeliveredKeep = cmp.Or(c.DeliveredKeep, DeliveredKeepDefault)
	c.SyncInterval = cmp.Or(c.SyncInterval, SyncIntervalDefault)
	c.SyncAcceleratedInterval = cmp.Or(c.SyncAcceleratedInterval, SyncAcceleratedIntervalDefault)
	c.SyncMinActivityAge = cmp.Or(c.SyncMinActivityAge, SyncMinActivityAgeDefault)
	c.SyncMaxActivities = cmp.Or(c.SyncMaxActivities, SyncMaxActivitiesDefault)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	u, err := url.Parse(c.ExternalEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("external endpoint %q is not an http(s) base URL", c.ExternalEndpoint)
	}
	if len(c.Key) != ed25519.PrivateKeySize {
		return fmt.Errorf("domain key has %d bytes, want %d", len(c.Key), ed25519.PrivateKeySize)
	}
	if c.InstanceID == "" {
		return errors.New("instance id is empty")
	}
	for name, p := range map[string]string{"follow": c.FollowAuthPolicy, "invite-witness": c.InviteWitnessAuthPolicy} {
		if p != PolicyAcceptAll && p != PolicyAcceptList {
			return fmt.Errorf("%s auth policy %q: must be %s or %s", name, p, PolicyAcceptAll, PolicyAcceptList)
		}
	}
	if err := c.Redelivery.Validate(); err != nil {
		return err
	}
	for name, v := range map[string]int{"page size": c.PageSize, "delivery concurrency": c.DeliveryConcurrency,
		"inbox concurrency": c.InboxConcurrency, "claim limit": c.ClaimLimit, "sync max activities": c.SyncMaxActivities} {
		if v < 1 {
			return fmt.Errorf("%s %d: must be at least 1", name, v)
		}
	}
	for name, d := range map[string]time.Duration{"max clock skew": c.MaxClockSkew, "poll interval": c.PollInterval,
		"handler timeout": c.HandlerTimeout, "delivered keep": c.DeliveredKeep, "sync interval": c.SyncInterval,
		"sync accelerated interval": c.SyncAcceleratedInterval, "sync min activity age": c.SyncMinActivityAge} {
		if d <= 0 {
			return fmt.Errorf("%s %s: must be positive", name, d)
		}
	}
	if c.MaxInboxBytes < 1024 {
		return fmt.Errorf("max inbox bytes %d: must be at least 1024", c.MaxInboxBytes)
	}
	return nil
}
