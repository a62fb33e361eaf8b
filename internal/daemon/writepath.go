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
	"github.com/anchord/anchord/internal/pubsub"
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
	// (in memory, after the index commits) or releaseTx (in the database, inside it).
	reservations intake.Reservations
	release      func(ops []store.DIDOperation)
	releaseTx    func(ctx context.Context, tx store.Executor, ops []store.DIDOperation) error
	backend      anchor.Backend
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
	obs, err := observer.New(observer.Config{
		Profile: c.profile, Limits: c.limits, PollInterval: p.observerPoll, ReleaseFunc: p.release, ReleaseTxFunc: p.releaseTx, IndexTxRows: p.indexTxRows,
		Known: p.known, Resolver: resolver, Announcer: p.announcer, IndexedFunc: c.notifyIndexed, Logger: c.log("observer"), Registerer: c.reg,
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
		Profile: c.profile, AllowedOrigins: c.allowedOrigins(), CreateStateFunc: resolver.CreateState, Logger: c.log("intake"), Registerer: c.reg,
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

	c.routes = append(c.routes, httpapi.SidetreeRoutes(httpapi.SidetreeConfig{
		Operations: in, Resolver: resolver, DIDMethod: c.profile.Method, Orb: c.profile.Orb, VersionNotFound: observer.ErrNoSuchVersion, CAS: c.cas, CASNotFound: cas.ErrNotFound, CASInvalid: cas.ErrInvalidCID,
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
