package opqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/pubsub"
)

// Limits of one operation message: at most groupMaxOps operations and groupMaxBytes of requests
// (an operation larger than that travels alone; intake's body limit keeps them far smaller).
const (
	groupMaxOps   = 256
	groupMaxBytes = 512 << 10
	// PublishWorkersDefault is the number of publishes in flight at once per instance.
	PublishWorkersDefault = 2
)

// envelope is the operation topic's payload: the operations of one publish. Grouping is what
// makes the broker affordable: its cost is per message, and under load one message carries the
// operations of every request that arrived while the previous publishes were in flight.
type envelope struct {
	Ops []message `json:"ops"`
}

// encodeAll encodes ms as envelopes within the message limits.
func encodeAll(ms []message) []*pubsub.Message {
	var out []*pubsub.Message
	for _, group := range chunks(ms) {
		body, _ := json.Marshal(envelope{Ops: group}) // strings and bytes always encode
		out = append(out, &pubsub.Message{Body: body})
	}
	return out
}

// chunks splits ms into groups within the message limits.
func chunks(ms []message) [][]message {
	var out [][]message
	for len(ms) > 0 {
		n, size := 0, 0
		for n < len(ms) && n < groupMaxOps && (n == 0 || size+len(ms[n].Request) <= groupMaxBytes) {
			size += len(ms[n].Request)
			n++
		}
		out = append(out, ms[:n])
		ms = ms[n:]
	}
	return out
}

type pubReq struct {
	m    message
	at   time.Time
	done chan error
}

// Run publishes the operations handed to Add, with PublishWorkers publishes in flight. A worker
// takes everything that waits when it becomes free, so groups grow with the load and an idle
// instance publishes an operation alone, at once. When ctx ends Run publishes what was already
// handed to it and returns.
func (b *Broker) Run(ctx context.Context) error {
	defer close(b.stopped)
	// Handed-over operations are published even while stopping: the callers wait for them.
	pctx := context.WithoutCancel(ctx)
	var workers sync.WaitGroup
	for range b.cfg.PublishWorkers {
		workers.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case r := <-b.pubCh:
					b.publishGroup(pctx, b.take(r))
				}
			}
		})
	}
	workers.Wait()
	// Requests handed over after the workers' last look.
	for {
		select {
		case r := <-b.pubCh:
			b.publishGroup(pctx, b.take(r))
		default:
			return nil
		}
	}
}

// take returns first and what else waits, without blocking, up to groupMaxOps.
func (b *Broker) take(first pubReq) []pubReq {
	group := []pubReq{first}
	for len(group) < groupMaxOps {
		select {
		case r := <-b.pubCh:
			group = append(group, r)
		default:
			return group
		}
	}
	return group
}

// publishGroup publishes a group's operations in as few messages as the limits allow (one,
// unless the requests are large) and tells every caller the outcome.
func (b *Broker) publishGroup(ctx context.Context, group []pubReq) {
	ms := make([]message, len(group))
	for i, r := range group {
		ms[i] = r.m
	}
	err := b.ps.Publish(ctx, pubsub.TopicOperation, encodeAll(ms)...)
	if err != nil {
		err = fmt.Errorf("%w: publish operation: %w", ErrUnavailable, err)
	}
	for _, r := range group {
		if err == nil {
			b.q.m.added.Inc()
			b.q.m.addLatency.Observe(time.Since(r.at).Seconds())
		}
		r.done <- err
	}
}

// publish hands m to Run and waits for the broker's answer.
func (b *Broker) publish(ctx context.Context, m message) error {
	r := pubReq{m: m, at: time.Now(), done: make(chan error, 1)}
	select {
	case b.pubCh <- r:
	case <-b.stopped:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("publish operation: %w", ctx.Err())
	}
	// The broker may confirm it: a confirmed operation must not be reported as failed.
	return outcome(r.done, b.stopped)
}
