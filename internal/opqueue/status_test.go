package opqueue

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scanStatus is what Status answers, found by walking pending.
func scanStatus(q *Queue, now time.Time) Status {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.walkStatus(now)
}

// TestStatusMatchesAScanOfThePending drives a queue through adds, batches taken and given back
// with a backoff, and drains, and checks after each step that Status (which skips the walk while
// nothing backs off) answers what walking pending answers, at times before, inside and after
// every backoff.
func TestStatusMatchesAScanOfThePending(t *testing.T) {
	t.Parallel()
	q := &Queue{held: map[int64]struct{}{}, inBatch: map[int64]struct{}{}, settledInSync: map[int64]struct{}{},
		notify: make(chan struct{}, 1), cfg: Config{NowFunc: time.Now}}
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	id := int64(0)
	var batches []*Batch
	check := func(step int) {
		for _, ms := range []int{-1000, 0, 500, 1500, 3000, 10_000, 100_000} {
			now := at(ms)
			require.Equal(t, scanStatus(q, now), q.Status(now), "step %d, now %+d ms", step, ms)
		}
	}
	for step := range 2_000 {
		switch r := rng.IntN(10); {
		case r < 5: // operations committed, some out of id order (a Sync adopting older rows)
			var ops []*Op
			for range 1 + rng.IntN(5) {
				id++
				enq := at(rng.IntN(5_000))
				avail := enq
				if rng.IntN(8) == 0 {
					avail = enq.Add(time.Duration(rng.IntN(20_000)) * time.Millisecond)
				}
				opID := id
				if rng.IntN(10) == 0 {
					opID = -id
				}
				ops = append(ops, &Op{ID: opID, Suffix: "did-" + time.Duration(id).String(), EnqueuedAt: enq, AvailableAt: avail})
			}
			q.adopt(ops)
		case r < 7: // a batch taken
			if b := q.Remove(1 + rng.IntN(8)); b != nil {
				batches = append(batches, b)
			}
		case r < 9 && len(batches) > 0: // a batch given back, backing off
			b := batches[0]
			batches = batches[1:]
			for _, op := range b.ops {
				op.AvailableAt = at(rng.IntN(60_000))
			}
			q.putBack(b.ops)
		case r == 9 && rng.IntN(20) == 0:
			q.Drain()
		}
		check(step)
	}
}
