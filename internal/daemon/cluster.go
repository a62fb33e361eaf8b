package daemon

import (
	"context"
	"time"

	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/taskmgr"
)

// clusterObserverPoll: in a cluster the anchor topic wakes the observers; the poll only catches
// announcements that were lost.
const clusterObserverPoll = 5 * time.Second

// cluster is the shape of one instance among many on PostgreSQL and RabbitMQ: intake publishes
// to the operation topic, any instance's consumer queues the operation as its own row, anchors
// are announced on the anchor topic, and the op-queue monitor (one instance at a time, under a
// task permit) reposts the operations of instances presumed dead.
func cluster(ctx context.Context, c *core) error {
	if err := c.pinDIDMethod(ctx); err != nil {
		return err
	}
	// Before anything indexes: the observer takes a DID without a state for one without
	// operations.
	if _, err := observer.FillStates(ctx, c.st, c.profile, c.batches, c.log("observer")); err != nil {
		return err
	}
	// Reservations live in the database, so one pending operation per DID holds across every
	// instance; a parked operation frees its DID there.
	pending := intake.NewSharedPending(c.st, c.pendingTTL(), c.log("intake"))
	// A parked operation will not be anchored: it stops showing in this instance's resolutions
	// (an operation another instance accepted is not in this one's store, and lapses there).
	unpublished := c.unpublished()
	var release func(keys []store.DIDPendingKey)
	if unpublished != nil {
		release = unpublished.Release
	}
	broker, err := opqueue.NewCluster(c.queueConfig(release), opqueue.BrokerConfig{
		PoolSize: c.cfg.MQOpQueuePool, TaskMonitorInterval: c.cfg.OpQueueTaskMonitorInterval, Logger: c.log("opqueue-broker"),
	}, c.st, c.ps)
	if err != nil {
		return err
	}
	queue := broker.Queue()
	if err := broker.Register(ctx); err != nil {
		return err
	}
	monitor, err := opqueue.NewMonitor(opqueue.MonitorConfig{
		InstanceID: c.instanceID, TaskExpiration: c.cfg.OpQueueTaskExpiration, MaxOpsToRepost: c.cfg.OpQueueMaxOpsToRepost,
		MaxAttempts: c.cfg.RedeliveryMaxAttempts, Logger: c.log("opqueue-monitor"), Registerer: c.reg,
	}, c.st, broker)
	if err != nil {
		return err
	}
	if err := c.tasks.Register(taskmgr.Task{ID: opqueue.TaskID, Interval: c.cfg.OpQueueTaskMonitorInterval, Run: monitor.RunTask}); err != nil {
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
	obs, err := c.writePath(writeParts{
		queue: queue, intake: broker, restore: broker.Restore, backend: backend,
		reservations: pending, releaseTx: pending.ReleaseTx, unpublished: unpublished, fetch: svc.Client().Fetch,
		announcer: c.ps, observerPoll: clusterObserverPoll,
	})
	if err != nil {
		return err
	}

	if err := c.anchorFederation(ctx, svc, obs); err != nil {
		return err
	}
	// Consumers stop first; the heartbeat runs until the writer has flushed, then the instance
	// hands back what it still holds and deletes its task entry.
	c.sup.add(StageConsumers, "opqueue-consumer", broker.Consume)
	// The publisher serves intake's Adds, so it stops only after HTTP has.
	c.sup.add(StageConsumers, "opqueue-publisher", broker.Run)
	// The committer serves the consumer's deliveries, so it stops after the consumer has
	// drained its handlers.
	c.sup.add(StageWriters, "opqueue", queue.Run)
	c.sup.add(StageConsumers, "observer-consumer", func(ctx context.Context) error { return obs.Subscribe(ctx, c.ps, c.cfg.MQObserverPool) })
	// Rows a separate submitter process gave back reach the queue through Watch.
	c.sup.add(StageConsumers, "opqueue-watch", func(ctx context.Context) error { return queue.Watch(ctx, 0) })
	c.sup.add(StageWriters, "opqueue-heartbeat", broker.Heartbeat)
	c.sup.onStop(StageWriters, "opqueue-give-back", func() {
		gctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
		defer cancel()
		if err := broker.GiveBack(gctx); err != nil {
			c.logger.Error("give back queued operations", "error", err)
		}
	})
	return nil
}
