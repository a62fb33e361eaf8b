package opqueue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/pubsub"
)

// Limits of one operation message. A message carries up to groupMaxOps operations or about
// groupMaxBytes of requests, whichever comes first; intake's body limit keeps one operation far
// below the byte bound.
const (
	groupMaxOps   = 256
	groupMaxBytes = 512 << 10
	// PublishWorkersDefault is the number of operation messages in flight at once per instance.
	PublishWorkersDefault = 2
)

// envelope is the operation topic's payload: the operations of one publish. Grouping is what
// makes the broker affordable: its cost is per message, and under load one message carries the
// operations of every request that arrived while the previous publishes were in flight.
type envelope struct {
	Ops []message `json:"ops"`
}

func encodeGroup(ms []message) *pubsub.Message {
	body, _ := json.Marshal(envelope{Ops: ms}) // strings and bytes always encode
	return &pubsub.Message{Body: body}
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
	done chan error
}

// Run publishes the operations handed to Add, in groups, with PublishWorkers publishes in
// flight. A worker takes everything that waits when it becomes free, so groups grow with the
// load and an idle instance publishes an operation alone, at once. When ctx ends Run publishes
// what was already handed to it and returns.
func (b *Broker) Run(ctx context.Context) error {
	defer b.once.Do(func() { close(b.stopped) })
	done := make(chan struct{})
	for range b.cfg.PublishWorkers {
		b.workers.Go(func() { b.publishLoop(ctx, done) })
	}
	<-ctx.Done()
	close(done)
	b.workers.Wait()
	// Requests handed over after the workers' last look are published here.
	for {
		group := b.take(nil)
		if len(group) == 0 {
			return nil
		}
		b.publishGroup(context.WithoutCancel(ctx), group)
	}
}

func (b *Broker) publishLoop(ctx context.Context, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case r := <-b.pubCh:
			group := b.take([]pubReq{r})
			pctx := ctx
			if ctx.Err() != nil {
				pctx = context.WithoutCancel(ctx) // handed over: published even while stopping
			}
			b.publishGroup(pctx, group)
		}
	}
}

// take adds what waits, without blocking, up to the limits of one message.
func (b *Broker) take(group []pubReq) []pubReq {
	size := 0
	for _, r := range group {
		size += len(r.m.Request)
	}
	for len(group) < groupMaxOps && size < groupMaxBytes {
		select {
		case r := <-b.pubCh:
			group = append(group, r)
			size += len(r.m.Request)
		default:
			return group
		}
	}
	return group
}

func (b *Broker) publishGroup(ctx context.Context, group []pubReq) {
	ms := make([]message, len(group))
	for i, r := range group {
		ms[i] = r.m
	}
	start := time.Now()
	err := b.ps.Publish(ctx, pubsub.TopicOperation, encodeGroup(ms))
	if err != nil {
		err = fmt.Errorf("%w: publish operation: %w", ErrUnavailable, err)
	} else {
		b.q.m.added.Add(float64(len(group)))
		b.q.m.addLatency.Observe(time.Since(start).Seconds())
	}
	for _, r := range group {
		r.done <- err
	}
}

// publish hands m to Run and waits for the broker's answer.
func (b *Broker) publish(ctx context.Context, m message) error {
	r := pubReq{m: m, done: make(chan error, 1)}
	select {
	case b.pubCh <- r:
	case <-b.stopped:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("publish operation: %w", ctx.Err())
	}
	// Once handed over the outcome is awaited even if ctx ends: the broker may confirm it,
	// and a confirmed operation must not be reported as failed.
	select {
	case err := <-r.done:
		return err
	case <-b.stopped:
		select {
		case err := <-r.done:
			return err
		default:
			return ErrClosed
		}
	}
}
