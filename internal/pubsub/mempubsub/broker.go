package mempubsub

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/pubsub"
)

// Broker holds the queues shared by the instances attached to it. Its zero value is not usable;
// call NewBroker.
type Broker struct {
	queues map[string]*queue // fixed at construction; read without a lock

	mu     sync.Mutex
	parked []pubsub.Parked
}

// NewBroker returns a broker with one queue per topic; no topics means pubsub.Topics.
func NewBroker(topics ...string) *Broker {
	if len(topics) == 0 {
		topics = pubsub.Topics
	}
	b := &Broker{queues: make(map[string]*queue, len(topics))}
	for _, t := range topics {
		b.queues[t] = &queue{notify: make(chan struct{})}
	}
	return b
}

// Parked returns the messages parked while no ParkFunc was configured, or whose ParkFunc had not
// succeeded when their subscription stopped, oldest first.
func (b *Broker) Parked() []pubsub.Parked {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.parked)
}

// Len returns the number of messages waiting in topic's queue (due or not), not counting those
// being handled.
func (b *Broker) Len(topic string) int {
	q, ok := b.queues[topic]
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (b *Broker) keepParked(p pubsub.Parked) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.parked = append(b.parked, p)
}

// item is a message waiting in a queue.
type item struct {
	msg     pubsub.Message // Attempt is the number of the next delivery
	readyAt time.Time
	history []string
	seq     uint64
}

// queue is a topic's messages ordered by due time, then publication order.
type queue struct {
	mu     sync.Mutex
	items  itemHeap
	seq    uint64
	notify chan struct{} // closed and replaced on every push; owned by the holder of mu
}

func (q *queue) push(it *item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	it.seq = q.seq
	heap.Push(&q.items, it)
	close(q.notify)
	q.notify = make(chan struct{})
}

// next waits for the earliest due item and takes it, or returns nil when ctx is done.
func (q *queue) next(ctx context.Context) *item {
	for {
		if ctx.Err() != nil {
			return nil
		}
		q.mu.Lock()
		now := time.Now()
		if len(q.items) > 0 && !q.items[0].readyAt.After(now) {
			it := heap.Pop(&q.items).(*item)
			q.mu.Unlock()
			return it
		}
		wait := time.Duration(-1)
		if len(q.items) > 0 {
			wait = q.items[0].readyAt.Sub(now)
		}
		notify := q.notify
		q.mu.Unlock()

		var timer *time.Timer
		var due <-chan time.Time
		if wait >= 0 {
			timer = time.NewTimer(wait)
			due = timer.C
		}
		select {
		case <-ctx.Done():
		case <-notify:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// itemHeap implements heap.Interface.
type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if !h[i].readyAt.Equal(h[j].readyAt) {
		return h[i].readyAt.Before(h[j].readyAt)
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)   { *h = append(*h, x.(*item)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}
