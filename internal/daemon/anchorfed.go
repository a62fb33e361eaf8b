package daemon

import (
	"cmp"
	"context"
	"errors"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/relay"
	"github.com/anchord/anchord/internal/vc"
	"github.com/anchord/anchord/internal/witness"
)

// anchorFederation carries anchors between this domain and the domains it follows, on the
// ActivityPub service svc: the publisher posts a Create of each anchor obs indexes, in sequence
// order (every instance runs one; they take turns on the database row); the receiver handles
// the Create and Announce activities of followed domains and indexes their anchors through obs,
// and its sweep (every instance) applies anchors whose parents arrived later.
func (c *core) anchorFederation(ctx context.Context, svc *federation.Service, obs *observer.Observer) error {
	key, err := c.domainKey(ctx)
	if err != nil {
		return err
	}
	did, err := vc.DIDWeb(svc.Endpoint())
	if err != nil {
		return err
	}
	cfg := relay.Config{
		Identity: relay.Identity{
			ActorIRI: svc.ActorIRI(), FollowersIRI: svc.FollowersIRI(), Endpoint: svc.Endpoint(), DID: did, Key: key,
		},
		Profile: c.profile, Limits: c.limits, Registerer: c.reg,
	}
	pubCfg := cfg
	pubCfg.Logger = c.log("relay-publisher")
	// A witnessed anchor is published with the link its witnesses signed.
	pubCfg.LinkFunc = func(ctx context.Context, seq int64) (*activity.Link, bool, error) {
		return witness.Link(ctx, c.st, seq, activity.MediaTypeGzipBase64)
	}
	// The publisher lays its Creates out for the outbox before the transaction that posts them.
	prepare := func(a *activity.Activity, linkset []byte) (relay.PostPreparedFunc, error) {
		o, err := svc.Prepare(a, linkset)
		if err != nil {
			return nil, err
		}
		return o.PostTx, nil
	}
	publisher, err := relay.NewPublisher(pubCfg, c.st, c.cas, prepare)
	if err != nil {
		return err
	}
	recvCfg := cfg
	recvCfg.Logger = c.log("relay-receiver")
	receiver, err := relay.NewReceiver(recvCfg, c.st, c.cas, obs.ObserveForeign, svc.Client().Fetch, svc.PostTx, svc.IsFollowing)
	if err != nil {
		return err
	}
	for t, handle := range map[activity.Type]func(context.Context, relay.Inbound) error{
		activity.TypeCreate:   receiver.HandleCreate,
		activity.TypeAnnounce: receiver.HandleAnnounce,
	} {
		if err := svc.RegisterHandler(t, federation.Handler{Authorize: svc.RequireFollowing, Handle: inboxHandler(handle)}); err != nil {
			return err
		}
	}
	if err := c.witnessing(ctx, svc); err != nil {
		return err
	}
	if c.profile.Orb && c.resolver != nil {
		// Orb's DID discovery asks a DID's anchor origin, through WebFinger, for its latest anchor.
		svc.RegisterDIDInfo(func(ctx context.Context, did string) (federation.DIDInfo, bool, error) {
			origin, anchor, ok, err := c.resolver.OrbInfo(ctx, did)
			return federation.DIDInfo{AnchorOrigin: origin, Anchor: anchor}, ok, err
		})
	}
	if c.profile.Orb && c.resolver != nil && c.cfg.Federation.EnableDIDDiscovery {
		disc := relay.NewDiscoverer(receiver, svc.Client().Fetch, c.log("did-discovery"))
		c.resolver.SetMissFunc(disc.Request)
		// It only queues work for the receiver: it stops with the consumers.
		c.sup.add(StageConsumers, "did-discovery", disc.Run)
	}
	c.onIndexed = append(c.onIndexed, func(r observer.Result) { publisher.Indexed(r.Seq, r.Suffixes) })
	// Both write only to the database: they stop with the consumers, and whatever they leave
	// (an anchor not yet published, an anchor still waiting) is taken up at the next start or
	// by another instance.
	c.sup.add(StageConsumers, "relay-publisher", publisher.Run)
	c.sup.add(StageConsumers, "relay-sweep", receiver.Run)
	return nil
}

// inboxHandler adapts a relay handler to the inbox processor: the peer's faults are parked at
// once, anything else is retried on the redelivery schedule.
func inboxHandler(handle func(context.Context, relay.Inbound) error) func(context.Context, federation.Inbound) error {
	return func(ctx context.Context, in federation.Inbound) error {
		err := handle(ctx, relay.Inbound{Activity: in.Activity, Body: in.Body, Actor: in.Actor, Live: in.Source == federation.SourceLive})
		if errors.Is(err, relay.ErrInvalid) || errors.Is(err, relay.ErrNotFollowed) {
			return federation.Permanent(err)
		}
		return err
	}
}

// allowedOrigins is what intake accepts as a declared anchorOrigin: --allowed-origins, or by
// default this domain's own names (its endpoint, its actor and its did:web). A DID that names
// another domain as its origin is that domain's to anchor; accepting it here too would let two
// domains anchor the same DID, and followers would apply only one of the two chains.
func (c *core) allowedOrigins() []string {
	if list := c.cfg.AllowedOriginList(); len(list) > 0 {
		return list
	}
	endpoint := c.cfg.ExternalEndpointURL()
	out := []string{endpoint, endpoint + federation.ServicePath}
	if did, err := vc.DIDWeb(endpoint); err == nil {
		out = append(out, did)
	}
	return out
}

// notifyIndexed tells the components that wait for indexed anchors (onIndexed) of one.
func (c *core) notifyIndexed(r observer.Result) {
	for _, f := range c.onIndexed {
		f(r)
	}
}

// unpublished returns the did:orb profile's store of unpublished operations
// (--enable-unpublished-operation-store), nil without it. An operation is kept as long as its
// DID's reservation may last: by then it is indexed, parked, or lost with a dead instance.
func (c *core) unpublished() *observer.Unpublished {
	if !c.profile.Orb || !c.cfg.Federation.EnableUnpublishedOperationStore {
		return nil
	}
	return observer.NewUnpublished(cmp.Or(c.pendingTTL(), intake.PendingTTLDefault), 0)
}
