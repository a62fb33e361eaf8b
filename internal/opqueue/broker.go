package opqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
)

// Defaults of BrokerConfig.
const (
	// PoolSizeDefault is mq-op-queue-pool: concurrent consumers of the operation topic.
	PoolSizeDefault = 5
	// TaskMonitorIntervalDefault is op-queue-task-monitor-interval: how often the instance
	// refreshes its task entry (and how often the monitor runs).
	TaskMonitorIntervalDefault = 10 * time.Second
)

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	PoolSize            int
	TaskMonitorInterval time.Duration
	Logger              *slog.Logger
}

// Broker connects a Queue to the operation topic for cluster mode (DESIGN.md pipeline):
//
//   - Add publishes an accepted operation and returns once the broker confirmed it;
//   - Consume stores each delivered operation as this instance's op_queue row (with its expiry)
//     and in the in-memory queue, then acks — so a message is acked only after its row exists;
//   - Repost publishes failed operations again with a delay, for any instance to take;
//   - Heartbeat refreshes the instance's task entry and stops the instance once it has been
//     taken over; GiveBack reposts what the instance still holds when it stops.
type Broker struct {
	cfg BrokerConfig
	q   *Queue
	ps  pubsub.PubSub
}

// NewBroker returns a Broker over q and ps and puts q in cluster mode: its Acks are fenced by
// the instance's task entry, anchored operations are recorded against duplicates, and its Nacks
// repost through the Broker.
func NewBroker(cfg BrokerConfig, q *Queue, ps pubsub.PubSub) *Broker {
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = PoolSizeDefault
	}
	if cfg.TaskMonitorInterval <= 0 {
		cfg.TaskMonitorInterval = TaskMonitorIntervalDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Broker{cfg: cfg, q: q, ps: ps}
	q.cfg.Fenced = true
	q.cfg.Dedup = true
	q.cfg.RepostFunc = b.Repost
	return b
}

// message is the operation topic's payload. Attempts and History travel with the operation, so
// a repost keeps its failure count whichever instance takes it.
type message struct {
	OpID     string   `json:"opId"`
	Suffix   string   `json:"suffix"`
	Type     string   `json:"type"`
	Request  []byte   `json:"request"`
	Attempts int      `json:"attempts,omitempty"`
	History  []string `json:"history,omitempty"`
}

func encode(m message) *pubsub.Message {
	body, _ := json.Marshal(m) // a struct of strings and bytes always encodes
	return &pubsub.Message{ID: m.OpID, Body: body}
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
	start := time.Now()
	err := b.ps.Publish(ctx, pubsub.TopicOperation, encode(message{OpID: op.OpID, Suffix: op.Suffix, Type: op.Type, Request: op.Request}))
	if err != nil {
		return fmt.Errorf("%w: publish operation: %w", ErrUnavailable, err)
	}
	b.q.m.added.Inc()
	b.q.m.addLatency.Observe(time.Since(start).Seconds())
	return nil
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
	var m message
	if err := json.Unmarshal(msg.Body, &m); err != nil || m.OpID == "" || m.Suffix == "" || len(m.Request) == 0 {
		return pubsub.Permanent(fmt.Errorf("malformed operation message %s", msg.ID))
	}
	op := NewOp{OpID: m.OpID, Suffix: m.Suffix, Type: m.Type, Request: m.Request, Attempts: m.Attempts, History: m.History}
	if err := b.q.Restore(ctx, []NewOp{op}, nil); err != nil {
		return fmt.Errorf("store operation %s: %w", m.OpID, err)
	}
	return nil
}

// Repost publishes operations to the operation topic after delay; it is the Queue's RepostFunc.
func (b *Broker) Repost(ctx context.Context, ops []Op, delay time.Duration) error {
	msgs := make([]*pubsub.Message, len(ops))
	for i, op := range ops {
		msgs[i] = encode(message{OpID: op.OpID, Suffix: op.Suffix, Type: op.Type, Request: op.Request, Attempts: op.Attempts, History: op.History})
	}
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
	if len(ops) > 0 {
		ptrs := make([]*Op, len(ops))
		for i := range ops {
			ptrs[i] = &ops[i]
		}
		b.q.mu.Lock()
		for _, op := range ops {
			b.q.inBatch[op.ID] = struct{}{} // repost settles them
		}
		b.q.mu.Unlock()
		if left := b.q.repost(ctx, ptrs); len(left) > 0 {
			return fmt.Errorf("give back: %d operations could not be reposted; they stay for the op-queue monitor", len(left))
		}
	}
	if err := b.q.st.OpQueueTaskDelete(ctx, b.q.cfg.InstanceID); err != nil {
		return fmt.Errorf("give back: delete task entry: %w", err)
	}
	b.cfg.Logger.InfoContext(ctx, "gave back queued operations", "operations", len(ops))
	return nil
}
