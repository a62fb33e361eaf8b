package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// embeddedInstanceID owns the op_queue rows of a single-instance deployment: it must be the same
// after a restart, so that the restarted process finds its queued operations.
const embeddedInstanceID = "local"

// embeddedObserverPoll: embedded, the batch writer wakes the observer directly; the poll only
// finds anchors completed by a ledger's status poller.
const embeddedObserverPoll = time.Second

// embedded is the single-instance shape, on SQLite (or PostgreSQL without a broker): intake
// writes straight into the queue's rows, and this process indexes every anchor, so an
// in-memory filter of known DIDs answers "new DID" without a read. The queue is loaded, and
// every anchor completed before a restart is observed, before intake opens: no DID with an
// anchored but unindexed operation is validated against stale state.
func embedded(ctx context.Context, c *core) error {
	if err := c.pinDIDMethod(ctx); err != nil {
		return err
	}
	// Before anything indexes: the observer takes a DID without a state for one without
	// operations.
	if _, err := observer.FillStates(ctx, c.st, c.profile, c.batches, c.log("observer")); err != nil {
		return err
	}
	pending := intake.NewPending(c.pendingTTL())
	unpublished := c.unpublished()
	release := pending.Release
	if unpublished != nil {
		// A parked operation will not be anchored: it stops showing in resolutions.
		release = func(keys []store.DIDPendingKey) {
			pending.Release(keys)
			unpublished.Release(keys)
		}
	}
	queue, err := opqueue.New(c.queueConfig(release), c.st)
	if err != nil {
		return err
	}
	// The domain's ActivityPub service (the witness backend offers anchors through it); the
	// handlers of anchor activities are registered on it here, before the supervisor starts its
	// inbox processor.
	svc, err := c.federation(ctx)
	if err != nil {
		return err
	}
	backend, err := c.anchorBackend(ctx, queue.GiveBackTx, svc)
	if err != nil {
		return err
	}
	// Filled in the background (below): a start must not read every DID.
	known := observer.NewUnfilledKnown()
	if err := c.reg.Register(known.Collector()); err != nil {
		return fmt.Errorf("register the known filter's gauge: %w", err)
	}
	obs, err := c.writePath(writeParts{
		queue: queue, intake: queue, restore: queue.Restore, backend: backend,
		reservations: pending, release: pending.ReleaseIndexed, committing: pending.Committing, unpublished: unpublished, fetch: svc.Client().Fetch,
		known: known, observerPoll: embeddedObserverPoll, indexTxRows: indexTxRows(c.st),
	})
	if err != nil {
		return err
	}
	if err := c.anchorFederation(ctx, svc, obs); err != nil {
		return err
	}
	queued, err := queue.Load(ctx)
	if err != nil {
		return err
	}
	pending.ReserveAll(queued)
	if n, err := obs.CatchUp(ctx); err != nil {
		return fmt.Errorf("observe anchors completed before start: %w", err)
	} else if n > 0 {
		c.logger.Info("observed anchors completed before start", "anchors", n)
	}

	c.sup.add(StageConsumers, "known-filter", func(ctx context.Context) error { return c.fillKnown(ctx, known) })
	if s, ok := c.st.(*sqlitestore.Store); ok {
		relayout, err := sqlitestore.NewRelayout(s, c.log("store"), c.reg)
		if err != nil {
			return err
		}
		// The move of an older database to the current index layout starts once the filter is
		// filled, so that two passes over every DID do not run at once at start. It stops with
		// the consumers, so that the writers' last commits do not wait for one of its steps.
		c.sup.add(StageConsumers, "sqlite-relayout", func(ctx context.Context) error {
			for !known.Filled() {
				if !loop.Sleep(ctx, time.Second) {
					return nil
				}
			}
			return relayout.Run(ctx)
		})
	}
	// The committer serves intake's Adds, so it stops only after HTTP has.
	c.sup.add(StageConsumers, "opqueue", queue.Run)
	// Rows a separate submitter process gave back reach the queue through Watch.
	c.sup.add(StageConsumers, "opqueue-watch", func(ctx context.Context) error { return queue.Watch(ctx, 0) })
	return nil
}

// fillKnown fills the filter of known DIDs from the index, retrying a failed read, and then waits
// for the stop: until it is filled, creates and resolutions read the index instead.
func (c *core) fillKnown(ctx context.Context, known *observer.Known) error {
	start := time.Now()
	logger := c.log("observer")
	for attempt := 1; ; attempt++ {
		err := known.Fill(ctx, c.st)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			logger.Info("filter of known DIDs filled", "took", time.Since(start).Round(time.Millisecond), "suffixes", known.Len())
			break
		}
		wait := loop.Backoff(attempt, time.Second, 2, time.Minute)
		logger.Warn("fill the filter of known DIDs", "error", err, "retry_in", wait)
		if !loop.Sleep(ctx, wait) {
			return nil
		}
	}
	<-ctx.Done()
	return nil
}

// queueConfig is the operation queue's configuration; release, if set, is told the DIDs of
// parked operations.
func (c *core) queueConfig(release func(keys []store.DIDPendingKey)) opqueue.Config {
	return opqueue.Config{
		InstanceID: c.instanceID, MaxBacklog: c.cfg.OpQueueMaxBacklog, Lifespan: c.cfg.OpQueueOperationLifespan,
		Redelivery: c.cfg.Redelivery(), ReleaseFunc: release, Logger: c.log("opqueue"), Registerer: c.reg,
	}
}

// indexTxRows is the observer's IndexTxRows for st: slices on a store with one write connection,
// where an index transaction holds up every other commit; PostgreSQL's writers do not wait for it.
func indexTxRows(st store.Store) int {
	if st.Backend() == "sqlite" {
		return observer.IndexTxRowsOneWriter
	}
	return 0
}
