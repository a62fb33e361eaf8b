package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/expiry"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/taskmgr"
)

// federation builds the domain's ActivityPub service on the core: the signed client towards
// other domains, the service's routes (API listener) and admin routes (admin listener), the
// deliverer and inbox processor (every instance), the activity-sync task (one instance at a
// time), the expiry of delivered deliveries, and the dead-letter retry of kind activity; with
// them the witness log when the domain keeps one, since WebFinger advertises it, and the monitor
// of other domains' logs (witnesslog.go). The shape registers further inbox handlers on the
// returned service before the supervisor runs.
func (c *core) federation(ctx context.Context) (*federation.Service, error) {
	key, err := c.domainKey(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.openWitnessLog(ctx); err != nil {
		return nil, err
	}
	endpoint := c.cfg.ExternalEndpointURL()
	f := c.cfg.Federation
	guard, err := c.outbound()
	if err != nil {
		return nil, err
	}
	client, err := peer.New(peer.Config{
		KeyID: endpoint + federation.ServicePath + "/keys/main-key", PrivateKey: key, Timeout: f.RequestTimeout,
		HTTP: guard.Client(), Logger: c.log("peer"), Registerer: c.reg,
	}, c.st)
	if err != nil {
		return nil, err
	}
	svc, err := federation.New(federation.Config{
		ExternalEndpoint: endpoint, Key: key, InstanceID: c.claimOwner,
		PageSize: f.PageSize, MaxClockSkew: f.MaxClockSkew,
		MaxInboxBytes: f.InboxMaxAnchorActivityBytes, MaxSmallInboxBytes: f.InboxMaxActivityBytes,
		InboxActorRate: f.InboxActorRateLimit, InboxActorBurst: f.InboxActorRateBurst,
		InboxDomainRate: f.InboxDomainRateLimit, InboxDomainBurst: f.InboxDomainRateBurst, InboxKeep: f.InboxExpiryPeriod,
		FollowAuthPolicy: f.FollowAuthPolicy, InviteWitnessAuthPolicy: f.InviteWitnessAuthPolicy,
		Redelivery:   c.cfg.Redelivery(),
		SyncInterval: f.SyncInterval, SyncAcceleratedInterval: f.SyncAcceleratedInterval,
		SyncMinActivityAge: f.SyncMinActivityAge, SyncMaxActivities: f.SyncMaxActivities,
		WitnessLog: c.witnessLog != nil, Broker: c.ps, Logger: c.log("federation"), Registerer: c.reg,
	}, c.st, client)
	if err != nil {
		return nil, err
	}
	if err := svc.ReleaseOwnClaims(ctx); err != nil {
		return nil, err
	}
	c.routes = append(c.routes, svc.Routes())
	// The explorer's federation view reads the relationships and deliveries.
	c.federationView = svc
	c.adminRoutes = append(c.adminRoutes, svc.AdminRoutes())
	c.bodyLimits[federation.InboxPath()] = f.InboxMaxAnchorActivityBytes
	c.retry[store.DeadLetterActivity] = svc.RetryDeadLetter
	// Delivered deliveries, and inbox activities handled longer ago than --inbox-expiry-period.
	for _, table := range []string{"ap_deliveries", "ap_inbox"} {
		if err := c.expiry.Register(expiry.Disposable(table, "expires_at")); err != nil {
			return nil, err
		}
	}
	syncer := svc.Syncer()
	if err := c.tasks.Register(taskmgr.Task{
		ID: federation.SyncTaskID, Interval: syncer.Interval(), Run: syncer.RunTask, NextIntervalFunc: syncer.NextInterval,
	}); err != nil {
		return nil, err
	}
	witnesses, err := c.monitorWitnesses()
	if err != nil {
		return nil, err
	}
	dir := &logDirectory{st: c.st, svc: svc, client: svc.Client(), logger: c.log("logmonitor"), witnesses: witnesses}
	if err := c.logMonitor(dir); err != nil {
		return nil, err
	}
	if err := c.tlogWitness(ctx, dir); err != nil {
		return nil, err
	}
	// Inbox processors and deliverers stop with the consumers: a claimed row they leave is
	// settled, or its claim expires and another instance (or the next start) takes it. The
	// processor is made when its stage starts, after every handler was registered.
	c.sup.add(StageConsumers, "activity-inbox", func(ctx context.Context) error { return svc.Processor().Run(ctx) })
	c.sup.add(StageConsumers, "activity-deliverer", svc.Deliverer().Run)
	if c.ps != nil {
		// Wake-ups cross the broker, which closes after the consumers have stopped.
		c.sup.add(StageConsumers, "activity-wake", svc.RunWaker)
	}
	c.logger.Info("activitypub service", "actor", svc.ActorIRI())
	return svc, nil
}

// outbound returns the outbound guard every request to another domain passes, built at its
// first use: the admin listener, as configured and as bound (its port may have been 0), is
// refused always. Whatever fetches from other domains (the federation, DID discovery) takes
// its client.
func (c *core) outbound() (*egress.Guard, error) {
	if c.egress != nil {
		return c.egress, nil
	}
	f := c.cfg.Federation
	allowed, err := egress.ParseAllowed(f.PeerAllowedAddresses)
	if err != nil {
		return nil, fmt.Errorf("--peer-allowed-addresses: %w", err)
	}
	refused := []string{c.cfg.AdminAddr, c.adminLn.Addr().String()}
	guard, err := egress.New(egress.Config{
		Allowed: allowed, Refused: refused, MaxRequests: f.PeerMaxRequests, MaxRequestsPerHost: f.PeerMaxRequestsPerHost,
		Timeout: f.RequestTimeout, Logger: c.log("egress"), Registerer: c.reg,
	})
	if err != nil {
		return nil, err
	}
	// Idle connections to other domains close once every loop that uses them has stopped.
	c.sup.onStop(StageWriters, "egress", guard.CloseIdleConnections)
	c.logger.Info("outbound guard", "allowed", allowed.String(), "refused", strings.Join(refused, ","),
		"max_requests", f.PeerMaxRequests, "max_requests_per_host", f.PeerMaxRequestsPerHost)
	c.egress = guard
	return guard, nil
}
