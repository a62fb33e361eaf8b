package federation

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"math"
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
	// InviteWitnessAuthPolicyDefault is --invite-witness-auth-policy: accept-list, where Orb's
	// is accept-all. A domain we witness for has us sign a proof for each of its anchors and,
	// with a witness log, append each credential to a log that is never pruned: under accept-all
	// any domain could spend our CPU and our disk for as long as it likes (the inbox's rates
	// bound how fast, not how much). A follower only reads what is public, so Follow stays
	// accept-all.
	InviteWitnessAuthPolicyDefault = PolicyAcceptList
	// MaxInboxBytesDefault is --inbox-max-anchor-activity-bytes: it bounds the activities that
	// carry an anchor (Create, Announce, Offer), whose linkset lists one item per operation of
	// the batch as data URIs, and so every body the inbox reads.
	MaxInboxBytesDefault = activity.MaxActivityBytesDefault
	// MaxSmallInboxBytesDefault is --inbox-max-activity-bytes: it bounds every other activity
	// (Follow, Invite, Accept, Reject, Undo, Like), which names or embeds a few small objects;
	// the largest, an Accept of an Offer with its proof, is about 2 KB.
	MaxSmallInboxBytesDefault = 64 << 10
	// InboxActorRateDefault and InboxActorBurstDefault are --inbox-actor-rate-limit and
	// --inbox-actor-rate-burst: activities one actor may post per second, and at once. A domain
	// posts about one activity per anchor to each peer (a Create, an Offer, an Accept, a Like),
	// so ten a second is far above what a batch writer makes; the burst takes a peer's backlog
	// after an outage.
	InboxActorRateDefault  = 10.0
	InboxActorBurstDefault = 100
	// InboxDomainRateDefault and InboxDomainBurstDefault are --inbox-domain-rate-limit and
	// --inbox-domain-rate-burst: the same for all the actors of one domain (scheme, host and
	// port) together, so that a domain cannot multiply its share by naming more actors.
	InboxDomainRateDefault  = 20.0
	InboxDomainBurstDefault = 200
	// InboxKeepDefault is --inbox-expiry-period: how long a handled inbox activity is kept before
	// the data-expiry task deletes it (a peer's activity sync reading our inbox from further
	// back misses it).
	InboxKeepDefault = 7 * 24 * time.Hour
	// AnswerIntervalDefault is the least time between two Accepts of one peer's repeated Follow
	// (or Invite): a repeat sooner is recorded and not answered again.
	AnswerIntervalDefault = 10 * time.Minute
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
	// MaxInboxBytes bounds Create, Announce and Offer bodies, and so every body the inbox reads;
	// MaxSmallInboxBytes every other activity type's.
	MaxInboxBytes      int64
	MaxSmallInboxBytes int64
	// InboxActor* and InboxDomain* are the inbox's rates per actor and per domain (token buckets,
	// per instance); beyond them the inbox answers 429 with Retry-After.
	InboxActorRate   float64
	InboxActorBurst  int
	InboxDomainRate  float64
	InboxDomainBurst int
	// InboxKeep is how long a handled inbox row is kept before expiry deletes it.
	InboxKeep time.Duration
	// AnswerInterval is the least time between two answers to one peer's repeated Follow or
	// Invite.
	AnswerInterval time.Duration

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
	c.MaxSmallInboxBytes = cmp.Or(c.MaxSmallInboxBytes, min(MaxSmallInboxBytesDefault, c.MaxInboxBytes))
	c.InboxActorRate = cmp.Or(c.InboxActorRate, InboxActorRateDefault)
	c.InboxActorBurst = cmp.Or(c.InboxActorBurst, InboxActorBurstDefault)
	c.InboxDomainRate = cmp.Or(c.InboxDomainRate, InboxDomainRateDefault)
	c.InboxDomainBurst = cmp.Or(c.InboxDomainBurst, InboxDomainBurstDefault)
	c.InboxKeep = cmp.Or(c.InboxKeep, InboxKeepDefault)
	c.AnswerInterval = cmp.Or(c.AnswerInterval, AnswerIntervalDefault)
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
	if c.MaxInboxBytes < 1024 || c.MaxSmallInboxBytes < 1024 || c.MaxSmallInboxBytes > c.MaxInboxBytes {
		return fmt.Errorf("max inbox bytes %d and %d (small activities): must be at least 1024, the second at most the first",
			c.MaxInboxBytes, c.MaxSmallInboxBytes)
	}
	for name, r := range map[string]float64{"inbox actor rate": c.InboxActorRate, "inbox domain rate": c.InboxDomainRate} {
		if r <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("%s %v: must be a positive number", name, r)
		}
	}
	for name, b := range map[string]int{"inbox actor burst": c.InboxActorBurst, "inbox domain burst": c.InboxDomainBurst} {
		if b < 1 {
			return fmt.Errorf("%s %d: must be at least 1", name, b)
		}
	}
	if c.InboxKeep <= 0 || c.AnswerInterval <= 0 {
		return fmt.Errorf("inbox keep %s and answer interval %s: must be positive", c.InboxKeep, c.AnswerInterval)
	}
	return nil
}
