package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/batch"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/expiry"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/taskmgr"
)

// embeddedInstanceID owns the op_queue rows of a single-instance deployment: it must be the same
// after a restart, so that the restarted process finds its queued operations.
const embeddedInstanceID = "local"

// Observer poll intervals: embedded, the batch writer wakes the observer directly; in a cluster
// the anchor topic does, and the poll only catches announcements that were lost.
const (
	embeddedObserverPoll = time.Second
	clusterObserverPoll  = 5 * time.Second
)

// opQueueMonitorTask is the task id of the op-queue monitor (Orb's name).
const opQueueMonitorTask = "op-queue-monitor"

// wiring carries what every part of the write path is built from.
type wiring struct {
	cfg    config.Config
	st     store.Store
	ps     pubsub.PubSub // nil in embedded mode
	logger *slog.Logger
	reg    prometheus.Registerer
	sup    *supervisor
	checks map[string]httpapi.CheckFunc
}

func (w *wiring) log(component string) *slog.Logger { return w.logger.With("component", component) }

// buildPipeline builds the write path — intake, operation queue, batch writer, anchoring,
// observer, resolution, tasks — registers its components with the supervisor, and returns the
// HTTP routes. Embedded, the queue is loaded and every anchor completed before a restart is
// observed before intake opens, so no DID with an anchored but unindexed operation is validated
// against stale state.
func buildPipeline(ctx context.Context, w *wiring) (func(mux *http.ServeMux), error) {
	cfg := w.cfg
	cluster := w.ps != nil
	submitterOnly := cfg.Roles == "submitter"
	instanceID := embeddedInstanceID
	if cluster || submitterOnly {
		// A fresh identity per process start: a restarted instance never inherits the task
		// entry (and fence) of its previous life, and a submitter process never shares the
		// API instance's identity in the task permits.
		instanceID = uuid.NewString()
	}
	w.logger.Info("instance", "instance_id", instanceID, "mode", map[bool]string{false: "embedded", true: "cluster"}[cluster])

	profile := cfg.SidetreeProfile()
	limits := batchfile.DefaultLimits()
	limits.CheckURIFunc = func(uri string) error { _, err := cas.ParseCID(uri); return err }
	pending := intake.NewPending(0)

	casStore, err := cas.NewStore(cas.StoreConfig{Version: cas.CIDVersion(cfg.CASCIDVersion), Logger: w.log("cas"), Registerer: w.reg}, w.st)
	if err != nil {
		return nil, err
	}
	poll := embeddedObserverPoll
	var known *observer.Known
	if cluster {
		poll = clusterObserverPoll
	} else {
		// Embedded, this process indexes every anchored operation, so an in-memory filter of
		// indexed DIDs can answer "new DID" without a database read.
		if known, err = observer.LoadKnown(ctx, w.st); err != nil {
			return nil, err
		}
	}
	resolver := observer.NewResolver(profile, w.st, known)
	obs, err := observer.New(observer.Config{
		Profile: profile, Limits: limits, PollInterval: poll, ReleaseFunc: pending.Release, Known: known, Resolver: resolver,
		Logger: w.log("observer"), Registerer: w.reg,
	}, w.st, casStore.FetchFunc)
	if err != nil {
		return nil, err
	}
	queue, err := opqueue.New(opqueue.Config{
		InstanceID: instanceID, MaxBacklog: cfg.OpQueueMaxBacklog, Lifespan: cfg.OpQueueOperationLifespan,
		MaxAttempts: cfg.RedeliveryMaxAttempts, InitialInterval: cfg.RedeliveryInitialInterval,
		Multiplier: cfg.RedeliveryMultiplier, MaxInterval: cfg.RedeliveryMaxInterval,
		ReleaseFunc: pending.Release, Logger: w.log("opqueue"), Registerer: w.reg,
	}, w.st)
	if err != nil {
		return nil, err
	}
	var backend anchor.Backend
	if cfg.AnchorBackend == "ledger" {
		if backend, err = ledgerBackend(ctx, w); err != nil {
			return nil, err
		}
	} else {
		key, err := anchor.LoadOrCreateDomainKey(ctx, w.st)
		if err != nil {
			return nil, err
		}
		backend = anchor.NewLocal(key)
	}
	anchors, err := anchor.NewWriter(anchor.Config{Logger: w.log("anchor"), Registerer: w.reg}, backend)
	if err != nil {
		return nil, err
	}
	tasks, err := taskmgr.New(taskmgr.Config{InstanceID: instanceID, CheckInterval: cfg.TaskManagerCheckInterval, Logger: w.logger, Registerer: w.reg}, w.st)
	if err != nil {
		return nil, err
	}
	exp, err := expiry.New(expiry.Config{Interval: cfg.DataExpiryCheckInterval, Logger: w.logger, Registerer: w.reg}, w.st, tasks.Fence)
	if err != nil {
		return nil, err
	}
	if err := exp.Register(expiry.Disposable("anchored_ops", "expires_at")); err != nil {
		return nil, err
	}
	if err := tasks.Register(taskmgr.Task{ID: expiry.TaskID, Interval: exp.Interval(), Run: exp.Expire}); err != nil {
		return nil, err
	}
	if cfg.AnchorBackend == "ledger" {
		// Requeued operations are rows of the instance whose queue will take them: this one;
		// for a submitter process, the single API instance when there is no broker, or — owned
		// by this process, which has no task entry — the op-queue monitor reposts them.
		owner := instanceID
		if submitterOnly && !cluster {
			owner = embeddedInstanceID
		}
		if err := startSubmitters(w, tasks, instanceID, owner, casStore, limits); err != nil {
			return nil, err
		}
	}
	if submitterOnly {
		// Only the submitters and the status poller: no intake, queue or batch writer.
		w.sup.add(StageConsumers, "taskmgr", tasks.Run)
		return func(*http.ServeMux) {}, nil
	}

	// The queue intake writes to, and how a retried dead letter goes back: embedded, straight
	// into this instance's queue; in a cluster, through the operation topic.
	var (
		in         intake.Queue = queue
		requeue                 = deadletter.RequeueFunc(queue.Restore)
		anchoredFn              = func(a store.Anchor, ops []sidetree.AnchoredOperation) {
			if a.Status == store.AnchorCompleted {
				obs.Handoff(a.Seq, ops)
			}
		}
	)
	if cluster {
		broker := opqueue.NewBroker(opqueue.BrokerConfig{PoolSize: cfg.MQOpQueuePool, TaskMonitorInterval: cfg.OpQueueTaskMonitorInterval, Logger: w.log("opqueue")}, queue, w.ps)
		if err := broker.Register(ctx); err != nil {
			return nil, err
		}
		monitor, err := opqueue.NewMonitor(opqueue.MonitorConfig{
			InstanceID: instanceID, TaskExpiration: cfg.OpQueueTaskExpiration, MaxOpsToRepost: cfg.OpQueueMaxOpsToRepost,
			MaxAttempts: cfg.RedeliveryMaxAttempts, Logger: w.log("opqueue-monitor"), Registerer: w.reg,
		}, w.st, broker)
		if err != nil {
			return nil, err
		}
		if err := tasks.Register(taskmgr.Task{ID: opQueueMonitorTask, Interval: cfg.OpQueueTaskMonitorInterval, Run: func(ctx context.Context, _ int64) error {
			// Unfenced on purpose: two monitors racing only repost an operation twice, and
			// anchored_ops keeps it from being anchored twice.
			_, err := monitor.RunOnce(ctx)
			return err
		}}); err != nil {
			return nil, err
		}
		in = broker
		requeue = clusterRequeue(broker, w.st)
		ps := w.ps
		anchoredFn = func(a store.Anchor, _ []sidetree.AnchoredOperation) {
			if a.Status != store.AnchorCompleted {
				return
			}
			// Best effort: an announcement that is lost is found by an observer's poll.
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := ps.Publish(pctx, pubsub.TopicAnchor, observer.AnchorMessage(a.Seq)); err != nil {
				w.logger.Warn("announce anchor; observers will find it by polling", "seq", a.Seq, "error", err)
			}
		}
		// Consumers stop first; the heartbeat runs until the writer has flushed, then the
		// instance hands back what it still holds and deletes its task entry.
		w.sup.add(StageConsumers, "opqueue-consumer", broker.Consume)
		// The publisher serves intake's Adds, so it stops only after HTTP has.
		w.sup.add(StageConsumers, "opqueue-publisher", broker.Run)
		// The committer serves the consumer's deliveries, so it stops after the consumer has
		// drained its handlers.
		w.sup.add(StageWriters, "opqueue", queue.Run)
		w.sup.add(StageConsumers, "observer-consumer", func(ctx context.Context) error { return obs.Subscribe(ctx, w.ps, cfg.MQObserverPool) })
		w.sup.add(StageWriters, "opqueue-heartbeat", broker.Heartbeat)
		w.sup.onStop(StageWriters, "opqueue-give-back", func() {
			gctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			if err := broker.GiveBack(gctx); err != nil {
				w.logger.Error("give back queued operations", "error", err)
			}
		})
	} else {
		suffixes, err := queue.Load(ctx)
		if err != nil {
			return nil, err
		}
		pending.ReserveAll(suffixes)
		n, err := obs.CatchUp(ctx)
		if err != nil {
			return nil, fmt.Errorf("observe anchors completed before start: %w", err)
		}
		if n > 0 {
			w.logger.Info("observed anchors completed before start", "anchors", n)
		}
		// The committer serves intake's Adds, so it stops only after HTTP has.
		w.sup.add(StageConsumers, "opqueue", queue.Run)
	}

	writer, err := batch.New(batch.Config{
		MaxOperationCount: cfg.MaxOperationCount, Timeout: cfg.BatchWriterTimeout, Profile: profile, Limits: limits,
		AnchoredFunc: anchoredFn, Logger: w.log("batch"), Registerer: w.reg,
	}, queue, casStore, anchors, w.st)
	if err != nil {
		return nil, err
	}
	intakeSvc, err := intake.New(intake.Config{Profile: profile, Logger: w.log("intake"), Registerer: w.reg}, in, resolver.StateVersion, pending)
	if err != nil {
		return nil, err
	}
	dead := deadletter.New(deadletter.Config{Profile: profile, Logger: w.log("deadletter")},
		w.st, requeue, reserveFunc(resolver, pending), pending.Release, w.ps)

	// The observer stops with the consumers (an anchor it has not indexed yet is indexed at the
	// next start, or by another instance); the batch writer flushes what is pending when its
	// stage stops; the task manager stops early, releasing its permits.
	w.sup.add(StageConsumers, "observer", obs.Run)
	w.sup.add(StageConsumers, "taskmgr", tasks.Run)
	w.sup.add(StageWriters, "batch-writer", writer.Run)
	// Rows written straight into op_queue — a rejected anchor's operations given back by the
	// submitter or the poller — reach this instance's batch writer through Watch.
	w.sup.add(StageConsumers, "opqueue-watch", func(ctx context.Context) error { return queue.Watch(ctx, 0) })

	sidetreeRoutes := httpapi.SidetreeRoutes(httpapi.SidetreeConfig{
		Operations: intakeSvc, Resolver: resolver, CAS: casStore, CASNotFound: cas.ErrNotFound, CASInvalid: cas.ErrInvalidCID,
		Anchors: w.st, RetryAfter: cfg.BatchWriterTimeout, MaxCASSize: batchfile.MaxChunkFileSizeDefault,
		Logger: w.log("http"),
	})
	adminRoutes := httpapi.AdminRoutes(httpapi.AdminConfig{DeadLetters: dead, Token: cfg.AdminToken, Logger: w.log("admin")})
	return func(mux *http.ServeMux) {
		sidetreeRoutes(mux)
		adminRoutes(mux)
	}, nil
}

// clusterRequeue sends retried dead letters back through the operation topic: the operation
// keeps its id, so if the record's deletion fails after the publish, a second retry is only a
// duplicate that anchored_ops absorbs.
func clusterRequeue(b *opqueue.Broker, st store.Store) deadletter.RequeueFunc {
	return func(ctx context.Context, ops []opqueue.NewOp, also func(ctx context.Context, tx store.Executor) error) error {
		reposts := make([]opqueue.Op, len(ops))
		for i, op := range ops {
			reposts[i] = opqueue.Op{OpID: op.OpID, Suffix: op.Suffix, Type: op.Type, Request: op.Request}
		}
		if err := b.Repost(ctx, reposts, 0); err != nil {
			return err
		}
		if also == nil {
			return nil
		}
		return st.InTx(ctx, also)
	}
}

// reserveFunc reserves a DID for an operation that bypasses intake (a retried dead letter).
func reserveFunc(r *observer.Resolver, p *intake.Pending) func(string) bool {
	return func(suffix string) bool {
		_, version, err := r.StateVersion(context.Background(), suffix)
		return err == nil && p.Reserve(suffix, version)
	}
}
