package opqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
)

// Defaults of MonitorConfig.
const (
	// TaskExpirationDefault is op-queue-task-expiration: an instance whose task entry is older
	// is presumed dead. Orb waits a minute; three missed refreshes are enough here, because a
	// false presumption costs no operation: the instance is fenced, stops, and its operations
	// are anchored by the others (docs/design/durability.md, link 6).
	TaskExpirationDefault = 15 * time.Second
	// MaxOpsToRepostDefault is op-queue-max-ops-to-repost, per run.
	MaxOpsToRepostDefault = 10_000
)

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// InstanceID is the monitoring instance; it never takes itself over.
	InstanceID     string
	TaskExpiration time.Duration
	MaxOpsToRepost int
	// MaxAttempts parks, instead of reposting, an operation that has already been through this
	// many failures (instance deaths included: an operation that kills whoever batches it must
	// not go round forever).
	MaxAttempts int
	Logger      *slog.Logger
	Registerer  prometheus.Registerer
}

// Monitor is the op-queue monitor task: it takes over instances that stopped refreshing their
// task entry and reposts their operations. It runs on one instance under the task manager.
//
// Take-over first deletes the dead instances' task entries (the fence: from then on their Acks
// fail, so an instance that was only slow cannot anchor what is reposted), then reposts their
// orphaned rows in bounded runs and deletes each row once its repost is confirmed. A run that
// stops half-way leaves orphaned rows, which the next run finds again; a row reposted twice is the
// same operation, which anchored_ops keeps from being anchored twice.
type Monitor struct {
	cfg MonitorConfig
	st  store.Store
	b   *Broker
	m   *monitorMetrics
}

// NewMonitor returns a Monitor that reposts through b.
func NewMonitor(cfg MonitorConfig, st store.Store, b *Broker) (*Monitor, error) {
	cfg.TaskExpiration = cmp.Or(cfg.TaskExpiration, TaskExpirationDefault)
	cfg.MaxOpsToRepost = cmp.Or(cfg.MaxOpsToRepost, MaxOpsToRepostDefault)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, pubsub.MaxAttemptsDefault)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.TaskExpiration < 0 || cfg.MaxOpsToRepost < 0 || cfg.MaxAttempts < 0 {
		return nil, errors.New("opqueue monitor: negative expiration, repost limit or attempts")
	}
	m, err := newMonitorMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Monitor{cfg: cfg, st: st, b: b, m: m}, nil
}

// MonitorResult describes one run.
type MonitorResult struct {
	TakenOver []string
	Reposted  int
	Parked    int
}

// TaskID is the op-queue monitor's task id (Orb's name).
const TaskID = "op-queue-monitor"

// RunTask is the monitor's task-manager entry point: one run per task interval. It is unfenced
// on purpose: two monitors racing only repost an operation twice, and anchored_ops keeps it from
// being anchored twice.
func (mo *Monitor) RunTask(ctx context.Context, _ int64) error {
	_, err := mo.RunOnce(ctx)
	return err
}

// RunOnce takes over expired instances and reposts up to MaxOpsToRepost orphaned operations.
func (mo *Monitor) RunOnce(ctx context.Context) (MonitorResult, error) {
	var res MonitorResult
	taken, err := mo.st.OpQueueTaskTakeOver(ctx, mo.cfg.TaskExpiration, mo.cfg.InstanceID)
	if err != nil {
		return res, err
	}
	res.TakenOver = taken
	for _, id := range taken {
		mo.m.takeovers.Inc()
		mo.cfg.Logger.WarnContext(ctx, "instance presumed dead; its operations are reposted", "instance", id, "expiration", mo.cfg.TaskExpiration)
	}
	orphans, err := mo.st.OpQueueOrphans(ctx, mo.cfg.MaxOpsToRepost, "")
	if err != nil {
		return res, err
	}
	if len(orphans) == 0 {
		return res, nil
	}
	now := time.Now().UTC().Format(time.RFC3339)
	byOwner := map[string][]store.QueuedOp{}
	for _, o := range orphans {
		byOwner[o.InstanceID] = append(byOwner[o.InstanceID], o)
	}
	for owner, rows := range byOwner {
		var repost []Op
		var park []store.QueuedOp
		for _, r := range rows {
			r.Attempts++
			r.History = appendHistory(r.History, fmt.Sprintf("attempt %d at %s: instance %s presumed dead", r.Attempts, now, owner))
			if r.Attempts >= mo.cfg.MaxAttempts {
				park = append(park, r)
				continue
			}
			repost = append(repost, Op{ID: r.ID, OpID: r.OpID, Suffix: r.Suffix, Type: r.Type, Request: r.Request, Attempts: r.Attempts, History: r.History})
		}
		if len(repost) > 0 {
			if err := mo.b.Repost(ctx, repost, 0); err != nil {
				return res, fmt.Errorf("repost operations of %s: %w", owner, err)
			}
			ids := make([]int64, len(repost))
			for i, op := range repost {
				ids[i] = op.ID
			}
			// Rows a consumer has meanwhile taken over (a redelivery) are no longer the dead
			// instance's and stay.
			if _, err := mo.st.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: owner}); err != nil {
				return res, fmt.Errorf("delete reposted operations of %s: %w", owner, err)
			}
			res.Reposted += len(repost)
			mo.m.reposted.Add(float64(len(repost)))
		}
		if len(park) > 0 {
			if err := mo.parkOrphans(ctx, owner, park); err != nil {
				return res, err
			}
			res.Parked += len(park)
		}
	}
	mo.cfg.Logger.InfoContext(ctx, "reposted operations of dead instances", "reposted", res.Reposted, "parked", res.Parked)
	return res, nil
}

func (mo *Monitor) parkOrphans(ctx context.Context, owner string, rows []store.QueuedOp) error {
	return mo.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		ids := make([]int64, len(rows))
		for i, r := range rows {
			if _, err := tx.DeadLetterInsert(ctx, store.DeadLetter{
				Kind: store.DeadLetterOperation, Ref: r.OpID, Payload: r.Request,
				Reason: "max attempts reached: instances died while holding it", Attempts: r.Attempts, History: r.History,
			}); err != nil {
				return err
			}
			ids[i] = r.ID
		}
		_, err := tx.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids, InstanceID: owner})
		return err
	})
}

type monitorMetrics struct {
	takeovers prometheus.Counter
	reposted  prometheus.Counter
}

func newMonitorMetrics(reg prometheus.Registerer) (*monitorMetrics, error) {
	m := &monitorMetrics{
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_takeovers_total", Help: "Instances presumed dead and taken over by the op-queue monitor.",
		}),
		reposted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_opqueue_monitor_reposted_total", Help: "Operations of dead instances reposted by the op-queue monitor.",
		}),
	}
	for _, c := range []prometheus.Collector{m.takeovers, m.reposted} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register op-queue monitor metrics: %w", err)
		}
	}
	return m, nil
}
