package daemon

import (
	"context"
	"time"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/batch"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/origin"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
)

// writeParts are what an embedded and a cluster instance build differently; writePath builds
// the rest of the pipeline from them.
type writeParts struct {
	// queue is the instance's queue, which the batch writer cuts batches from.
	queue *opqueue.Queue
	// intake is where accepted operations go: the queue itself, or the operation topic.
	intake intake.Queue
	// restore is how a retried dead letter goes back.
	restore deadletter.RequeueFunc
	// reservations hold one pending operation per DID; the observer ends them with release
	// (in memory, after the index commits; committing marks them while it is under way) or
	// releaseTx (in the database, inside it).
	reservations intake.Reservations
	release      func(ops []store.DIDOperation)
	committing   func(ops []store.DIDOperation) (done func())
	releaseTx    func(ctx context.Context, tx store.Executor, ops []store.DIDOperation) error
	backend      anchor.Backend
	// unpublished is the did:orb profile's store of unpublished operations
	// (--enable-unpublished-operation-store); nil: none.
	unpublished *observer.Unpublished
	// fetch reads from other domains through the outbound guard (the federation's client), for
	// resolutions from a DID's anchor origin.
	fetch origin.FetchFunc
	// Observer settings: see observer.Config.
	known        *observer.Known
	announcer    pubsub.Publisher
	observerPoll time.Duration
	indexTxRows  int
}

// writePath builds the observer and resolver, the batch writer, intake, the dead-letter service,
// the Sidetree and admin routes and the explorer, and registers their stages. It returns the
// observer, which the shapes feed differently (catch-up at start, or the anchor topic).
func (c *core) writePath(p writeParts) (*observer.Observer, error) {
	resolver := observer.NewResolver(c.profile, c.st, p.known, c.cfg.StateCacheSize)
	resolver.SetBatches(c.batches)
	release := p.release
	var accepted func(op *sidetree.Operation, opID, anchorOrigin string)
	if u := p.unpublished; u != nil {
		// The store forgets an operation once its index rows commit; until then resolutions
		// apply it.
		release = func(ops []store.DIDOperation) {
			if p.release != nil {
				p.release(ops)
			}
			u.Indexed(ops)
		}
		accepted = u.Add
	}
	if c.profile.Orb {
		f := c.cfg.Federation
		resolver.SetOrbOperations(observer.OrbOperations{
			Unpublished: p.unpublished, IncludeUnpublished: f.IncludeUnpublishedOperations, IncludePublished: f.IncludePublishedOperations,
		})
	}
	obs, err := observer.New(observer.Config{
		Profile: c.profile, Limits: c.limits, PollInterval: p.observerPoll, ReleaseFunc: release, CommittingFunc: p.committing, ReleaseTxFunc: p.releaseTx, IndexTxRows: p.indexTxRows,
		Known: p.known, Resolver: resolver, Batches: c.batches, Announcer: p.announcer, IndexedFunc: c.notifyIndexed, Logger: c.log("observer"), Registerer: c.reg,
	}, c.st, c.cas.FetchFunc)
	if err != nil {
		return nil, err
	}
	c.obs = obs
	c.resolver = resolver
	// An Orb domain orders a DID's operations by the whole second of their anchor's time.
	anchors, err := anchor.NewWriter(anchor.Config{WholeSeconds: c.profile.Orb, Logger: c.log("anchor"), Registerer: c.reg}, p.backend)
	if err != nil {
		return nil, err
	}
	writer, err := batch.New(batch.Config{
		MaxOperationCount: c.cfg.MaxOperationCount, Timeout: c.cfg.BatchWriterTimeout, Profile: c.profile, Limits: c.limits,
		AnchoredFunc: obs.Anchored, Logger: c.log("batch"), Registerer: c.reg,
	}, p.queue, c.cas, anchors, c.st)
	if err != nil {
		return nil, err
	}
	in, err := intake.New(intake.Config{
		Profile: c.profile, AllowedOrigins: c.allowedOrigins(), CreateStateFunc: resolver.CreateState, AcceptedFunc: accepted,
		Logger: c.log("intake"), Registerer: c.reg,
	}, p.intake, resolver.State, p.reservations)
	if err != nil {
		return nil, err
	}
	dead := deadletter.New(deadletter.Config{Profile: c.profile, Retry: c.retry, Logger: c.log("deadletter")},
		c.st, p.restore, in, c.ps)

	// The observer stops with the consumers: an anchor it has not indexed yet is indexed at the
	// next start, or by another instance.
	c.sup.add(StageConsumers, "observer", obs.Run)
	// The batch writer flushes what is pending when its stage stops.
	c.sup.add(StageWriters, "batch-writer", writer.Run)

	// The Sidetree API resolves through the anchor origin when asked to; everything else that
	// resolves (intake, the explorer, WebFinger) reads this domain's own state.
	var api httpapi.Resolver = resolver
	if c.profile.Orb && c.cfg.Federation.ResolveFromAnchorOrigin && p.fetch != nil {
		if api, err = origin.New(origin.Config{
			Self: c.cfg.ExternalEndpointURL(), Logger: c.log("origin"), Registerer: c.reg,
		}, resolver, p.fetch); err != nil {
			return nil, err
		}
	}
	c.routes = append(c.routes, httpapi.SidetreeRoutes(httpapi.SidetreeConfig{
		Operations: in, Resolver: api, DIDMethod: c.profile.Method, Orb: c.profile.Orb, VersionNotFound: observer.ErrNoSuchVersion, CAS: c.cas, CASNotFound: cas.ErrNotFound, CASInvalid: cas.ErrInvalidCID,
		Anchors: c.st, Witnesses: c.st, RetryAfter: c.cfg.BatchWriterTimeout, MaxCASSize: batchfile.MaxChunkFileSizeDefault,
		Logger: c.log("http"),
	}))
	if err := c.explorer(); err != nil {
		return nil, err
	}
	// The admin listener checks the admin token for every route.
	c.adminRoutes = append(c.adminRoutes, httpapi.AdminRoutes(httpapi.AdminConfig{DeadLetters: dead, Logger: c.log("admin")}))
	return obs, nil
}
