package opqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
)

// Defaults of BrokerConfig.
const (
	// PoolSizeDefault is mq-op-queue-pool: operation messages handled at once. Orb's 5 starves
	// the group committer: each handler waits for a commit, so the pool bounds the commit size.
	PoolSizeDefault = 64
	// TaskMonitorIntervalDefault is op-queue-task-monitor-interval: how often the instance
	// refreshes its task entry (and how often the monitor runs). Orb uses 10 s; half of it,
	// with TaskExpirationDefault, brings a dead instance's operations back within 30 s.
	TaskMonitorIntervalDefault = 5 * time.Second
)

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	PoolSize int
	// PublishWorkers is the number of operation messages Run keeps in flight.
	PublishWorkers      int
	TaskMonitorInterval time.Duration
	Logger              *slog.Logger
}

// Broker connects a Queue to the operation topic for cluster mode (docs/design/architecture.md, pipeline):
//
//   - Add publishes an accepted operation and returns once the broker confirmed it; Run groups
//     the operations of concurrent Adds into one message;
//   - Consume stores each delivered operation as this instance's op_queue row (with its expiry)
//     and in the in-memory queue, then acks — so a message is acked only after its rows exist;
//   - Repost publishes failed operations again with a delay, for any instance to take;
//   - Heartbeat refreshes the instance's task entry and stops the instance once it has been
//     taken over; GiveBack reposts what the instance still holds when it stops.
type Broker struct {
	cfg BrokerConfig
	q   *Queue
	ps  pubsub.PubSub
	// carry keeps what intake parsed from Add until the consumer takes the operation back.
	carry *carry

	pubCh   chan pubReq
	stopped chan struct{} // closed when Run has returned
}

// NewCluster returns the operation queue of a cluster instance and the Broker that connects it
// to the operation topic. The queue's Acks are fenced by the instance's task entry, anchored
// operations are recorded against duplicates, and what it holds at shutdown is reposted through
// the Broker.
func NewCluster(cfg Config, bcfg BrokerConfig, st store.Store, ps pubsub.PubSub) (*Broker, error) {
	q, err := New(cfg, st)
	if err != nil {
		return nil, err
	}
	bcfg.PoolSize = cmp.Or(bcfg.PoolSize, PoolSizeDefault)
	bcfg.PublishWorkers = cmp.Or(bcfg.PublishWorkers, PublishWorkersDefault)
	bcfg.TaskMonitorInterval = cmp.Or(bcfg.TaskMonitorInterval, TaskMonitorIntervalDefault)
	bcfg.Logger = cmp.Or(bcfg.Logger, slog.New(slog.DiscardHandler))
	if bcfg.PoolSize < 0 || bcfg.PublishWorkers < 0 || bcfg.TaskMonitorInterval < 0 {
		return nil, errors.New("opqueue: negative pool size, workers or interval")
	}
	b := &Broker{cfg: bcfg, q: q, ps: ps, carry: newCarry(q.cfg.NowFunc), pubCh: make(chan pubReq, 4*groupMaxOps), stopped: make(chan struct{})}
	q.fenced = true
	q.dedup = true
	q.repostFunc = b.Repost
	return b, nil
}

// Queue returns the instance's queue, which the batch writer takes batches from.
func (b *Broker) Queue() *Queue { return b.q }

// message is one operation in an envelope. Attempts and History travel with the operation, so a
// repost keeps its failure count whichever instance takes it.
type message struct {
	OpID     string   `json:"opId"`
	Suffix   string   `json:"suffix"`
	Type     string   `json:"type"`
	Request  []byte   `json:"request"`
	Attempts int      `json:"attempts,omitempty"`
	History  []string `json:"history,omitempty"`
}

// Register creates the instance's task entry. It must precede Consume: rows written without an
// entry would look orphaned to the monitor.
func (b *Broker) Register(ctx context.Context) error {
	if err := b.q.st.OpQueueTaskTouch(ctx, b.q.cfg.InstanceID); err != nil {
		return fmt.Errorf("register op-queue task entry: %w", err)
	}
	return nil
}

// Add publishes an operation; nil means the broker holds it durably.
func (b *Broker) Add(ctx context.Context, op NewOp) error {
	if b.q.Backlog() >= b.q.cfg.MaxBacklog {
		b.q.m.rejected.WithLabelValues("backlog").Inc()
		return ErrPushback
	}
	if op.OpID == "" {
		op.OpID = OpIDOf(op.Request)
	}
	b.carry.put(op.OpID, op.Parsed)
	err := b.publish(ctx, message{OpID: op.OpID, Suffix: op.Suffix, Type: op.Type, Request: op.Request})
	if err != nil {
		b.carry.drop(op.OpID)
	}
	return err
}

// Consume takes operations from the operation topic into this instance's queue until ctx is done.
func (b *Broker) Consume(ctx context.Context) error {
	err := b.ps.Subscribe(ctx, pubsub.TopicOperation, b.cfg.PoolSize, b.handle)
	if err != nil {
		return fmt.Errorf("consume operations: %w", err)
	}
	return nil
}

func (b *Broker) handle(ctx context.Context, msg *pubsub.Message) error {
	if err := failpoint.Err(failpoint.OpQueueConsumeFail); err != nil {
		return err
	}
	e, err := decodeEnvelope(msg.Body)
	if err != nil || len(e.Ops) == 0 {
		return pubsub.Permanent(fmt.Errorf("malformed operation message %s", msg.ID))
	}
	ops := make([]NewOp, len(e.Ops))
	for i, m := range e.Ops {
		if m.OpID == "" || m.Suffix == "" || len(m.Request) == 0 {
			return pubsub.Permanent(fmt.Errorf("malformed operation %d in message %s", i, msg.ID))
		}
		ops[i] = NewOp{
			OpID: m.OpID, Suffix: m.Suffix, Type: m.Type, Request: m.Request, Attempts: m.Attempts, History: m.History,
			Parsed: b.carry.take(m.OpID, m.Request),
		}
	}
	// All or nothing for the message: if a row fails, the message is redelivered, and the rows
	// that were committed are found again by their OpID instead of being duplicated.
	if err := b.q.Take(ctx, ops...); err != nil {
		return fmt.Errorf("store %d operations of message %s: %w", len(ops), msg.ID, err)
	}
	return nil
}

// Repost publishes operations to the operation topic after delay; it is the Queue's RepostFunc.
func (b *Broker) Repost(ctx context.Context, ops []Op, delay time.Duration) error {
	ms := make([]message, len(ops))
	for i, op := range ops {
		ms[i] = message{OpID: op.OpID, Suffix: op.Suffix, Type: op.Type, Request: op.Request, Attempts: op.Attempts, History: op.History}
	}
	msgs := encodeAll(ms)
	var err error
	if delay > 0 {
		err = b.ps.PublishDelayed(ctx, pubsub.TopicOperation, delay, msgs...)
	} else {
		err = b.ps.Publish(ctx, pubsub.TopicOperation, msgs...)
	}
	if err != nil {
		return fmt.Errorf("repost %d operations: %w", len(ops), err)
	}
	return nil
}

// Restore sends retried dead letters back through the operation topic, then runs also in a
// transaction of its own: the operation keeps its id, so if also fails after the publish, a
// second retry only makes a duplicate that anchored_ops absorbs.
func (b *Broker) Restore(ctx context.Context, ops []NewOp, also func(ctx context.Context, tx store.Executor) error) error {
	reposts := make([]Op, len(ops))
	for i, op := range ops {
		reposts[i] = Op{OpID: cmp.Or(op.OpID, OpIDOf(op.Request)), Suffix: op.Suffix, Type: op.Type, Request: op.Request}
	}
	if err := b.Repost(ctx, reposts, 0); err != nil {
		return err
	}
	if also == nil {
		return nil
	}
	return b.q.st.InTx(ctx, also)
}

// ErrTakenOver is returned by Heartbeat when the instance's task entry is gone: the op-queue
// monitor presumed it dead and reposted its operations, so it must stop.
var ErrTakenOver = errors.New("op-queue task entry taken over; this instance must stop")

// Heartbeat refreshes the task entry every TaskMonitorInterval until ctx is done. A refresh that
// finds the entry gone is fatal (ErrTakenOver); other failures are retried at the next tick.
func (b *Broker) Heartbeat(ctx context.Context) error {
	for loop.Sleep(ctx, loop.Jitter(b.cfg.TaskMonitorInterval, 0.1)) {
		err := b.q.st.OpQueueTaskRefresh(ctx, b.q.cfg.InstanceID)
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			return ErrTakenOver
		case err != nil && ctx.Err() == nil:
			b.cfg.Logger.WarnContext(ctx, "refresh op-queue task entry", "error", err)
		}
	}
	return nil
}

// GiveBack hands everything the instance still queues to the others at shutdown: the operations
// are reposted, their rows deleted, and the task entry removed, so nothing waits for the entry
// to expire. What cannot be reposted stays in its rows for the monitor.
func (b *Broker) GiveBack(ctx context.Context) error {
	ops := b.q.Drain()
	if left := b.q.repost(ctx, ops); len(left) > 0 {
		return fmt.Errorf("give back: %d operations could not be reposted; they stay for the op-queue monitor", len(left))
	}
	if err := b.q.st.OpQueueTaskDelete(ctx, b.q.cfg.InstanceID); err != nil {
		return fmt.Errorf("give back: delete task entry: %w", err)
	}
	b.cfg.Logger.InfoContext(ctx, "gave back queued operations", "operations", len(ops))
	return nil
}
