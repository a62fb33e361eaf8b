package opqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

type testBundle struct {
	q        *Queue
	st       store.Store
	clock    *anchordtest.Clock
	reg      *prometheus.Registry
	released chan []string
	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
}

func setup(t *testing.T, st store.Store, mutate ...func(*Config)) *testBundle {
	t.Helper()
	b := &testBundle{st: st, clock: anchordtest.NewClock(), reg: prometheus.NewRegistry(), released: make(chan []string, 100)}
	cfg := Config{
		InstanceID: "instance-a", Redelivery: pubsub.RedeliveryConfig{MaxAttempts: 3, InitialInterval: time.Second, Multiplier: 2, MaxInterval: time.Minute},
		Logger: anchordtest.Logger(t), Registerer: b.reg, NowFunc: b.clock.Now,
		ReleaseFunc: func(keys []store.DIDPendingKey) {
			suffixes := make([]string, len(keys))
			for i, k := range keys {
				suffixes[i] = k.Suffix
			}
			b.released <- suffixes
		},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	q, err := New(cfg, st)
	require.NoError(t, err)
	b.q = q
	b.start(t)
	return b
}

func (b *testBundle) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.done = make(chan error, 1)
	go func() { b.done <- b.q.Run(ctx) }()
	t.Cleanup(b.stop)
}

func (b *testBundle) stop() {
	b.stopOnce.Do(func() {
		b.cancel()
		<-b.done
	})
}

func add(t *testing.T, q *Queue, n int, prefix string) []NewOp {
	t.Helper()
	var ops []NewOp
	for i := range n {
		op := NewOp{Suffix: fmt.Sprintf("%s-%03d", prefix, i), Type: "create", Request: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		require.NoError(t, q.Add(context.Background(), op))
		ops = append(ops, op)
	}
	return ops
}

func rows(t *testing.T, st store.Store, instance string) []store.QueuedOp {
	t.Helper()
	r, err := st.OpQueueList(context.Background(), store.OpQueueListParams{InstanceID: instance, Limit: 100000})
	require.NoError(t, err)
	return r
}

func TestAddIsDurableBeforeItReturns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		// Many concurrent adds: each returns only once its row is committed, and they share commits.
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				op := NewOp{Suffix: fmt.Sprintf("s-%03d", i), Type: "create", Request: []byte(fmt.Sprintf(`{"n":%d}`, i))}
				if err := b.q.Add(ctx, op); err != nil {
					t.Errorf("add: %v", err)
				}
			})
		}
		wg.Wait()
		require.Len(t, rows(t, st, "instance-a"), 200)
		require.Equal(t, 200, b.q.Len())
		require.Equal(t, 200.0, testutil.ToFloat64(b.q.m.added))
		// Fewer commits than operations: group commit happened (200 adds racing one writer).
		commits := anchordtest.HistogramCount(t, b.reg, "anchord_opqueue_commit_size")
		require.Positive(t, commits)
		require.Less(t, commits, uint64(200))
		t.Logf("%s: 200 concurrent adds in %d commits", st.Backend(), commits)
	})
}

func TestRemoveOnePerDIDAndAckInAnchorTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		add(t, b.q, 5, "did")
		// A second operation for did-000 (cluster mode can queue one; embedded intake prevents it).
		require.NoError(t, b.q.Add(ctx, NewOp{Suffix: "did-000", Type: "update", Request: []byte(`{"update":1}`)}))

		peek := b.q.Peek(10)
		require.Len(t, peek, 5, "one per DID")
		batch := b.q.Remove(10)
		require.Equal(t, 5, batch.Len())
		require.Equal(t, 1, b.q.Len(), "the second did-000 operation waits for the next batch")
		require.Equal(t, 6, b.q.Backlog())

		// The anchor transaction fails after Ack: the rows are all still there.
		err := st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			require.NoError(t, batch.Ack(ctx, tx, 1))
			return errors.New("crash before commit")
		})
		require.Error(t, err)
		require.Len(t, rows(t, st, "instance-a"), 6)

		// It commits the second time.
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return batch.Ack(ctx, tx, 1) }))
		batch.Committed()
		left := rows(t, st, "instance-a")
		require.Len(t, left, 1)
		require.Equal(t, "update", left[0].Type)
		require.Equal(t, 1, b.q.Backlog())

		next := b.q.Remove(10)
		require.Equal(t, []string{"did-000"}, next.Suffixes())
	})
}

func TestReturnKeepsQueueOrder(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		add(t, b.q, 6, "did")
		batch := b.q.Remove(4)
		batch.Return(2) // the writer could fit only two
		require.Equal(t, []string{"did-000", "did-001"}, batch.Suffixes())
		again := b.q.Remove(10)
		require.Equal(t, []string{"did-002", "did-003", "did-004", "did-005"}, again.Suffixes())
	})
}

func TestNackBacksOffThenParks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		add(t, b.q, 2, "did")

		for attempt := 1; attempt <= 2; attempt++ {
			batch := b.q.Remove(10)
			require.NotNil(t, batch, "attempt %d", attempt)
			batch.Nack(ctx, fmt.Errorf("cas unavailable"))
			require.Nil(t, b.q.Remove(10), "backing off")
			st := b.q.Status(b.clock.Now())
			require.Zero(t, st.Available)
			wait := b.q.cfg.backoff(attempt)
			require.Equal(t, b.clock.Now().Add(wait), st.NextAvailable)
			b.clock.Advance(wait)
		}
		r := rows(t, st, "instance-a")
		require.Len(t, r, 2)
		require.Equal(t, 2, r[0].Attempts)
		require.Len(t, r[0].History, 2)
		require.Contains(t, r[0].History[1], "attempt 2")
		require.Contains(t, r[0].History[1], "cas unavailable")

		// Third failure reaches MaxAttempts: parked, not dropped.
		batch := b.q.Remove(10)
		batch.Nack(ctx, fmt.Errorf("cas unavailable"))
		require.Empty(t, rows(t, st, "instance-a"))
		require.Zero(t, b.q.Backlog())
		dl, err := st.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterOperation, Limit: 10})
		require.NoError(t, err)
		require.Len(t, dl, 2)
		require.Equal(t, 3, dl[0].Attempts)
		require.Len(t, dl[0].History, 3)
		require.Contains(t, dl[0].Reason, "max attempts reached")
		require.Equal(t, []byte(`{"n":0}`), dl[0].Payload)
		require.ElementsMatch(t, []string{"did-000", "did-001"}, anchordtest.WaitOrTimeout(t, b.released, time.Second))
		require.Equal(t, 2.0, testutil.ToFloat64(b.q.m.deadLettered))
	})
}

func TestParkOneOperation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		add(t, b.q, 3, "did")
		batch := b.q.Remove(10)
		bad := batch.Ops()[1]
		require.NoError(t, batch.Park(ctx, bad.OpID, "invalid against anchored state"))
		require.Equal(t, []string{"did-000", "did-002"}, batch.Suffixes())
		require.Equal(t, []string{"did-001"}, anchordtest.WaitOrTimeout(t, b.released, time.Second))
		require.Len(t, rows(t, st, "instance-a"), 2)
		require.Error(t, batch.Park(ctx, bad.OpID, "again"))
	})
}

func TestLoadAfterRestart(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			opener := storetest.OpenerFor(t, backend)
			st := storetest.Open(t, opener)
			b := setup(t, st)
			add(t, b.q, 4, "did")
			batch := b.q.Remove(2) // in flight when the process dies: not acked
			require.Equal(t, 2, batch.Len())
			b.stop()

			// A new process over the same database sees all four.
			st2 := storetest.Open(t, opener)
			b2 := setup(t, st2)
			keys, err := b2.q.Load(context.Background())
			require.NoError(t, err)
			var want []store.DIDPendingKey
			for i := range 4 {
				want = append(want, store.DIDPendingKey{Suffix: fmt.Sprintf("did-%03d", i), OpID: OpIDOf([]byte(fmt.Sprintf(`{"n":%d}`, i)))})
			}
			require.Equal(t, want, keys, "every queued operation, named for its reservation")
			require.Equal(t, 4, b2.q.Len())
		})
	}
}

func TestAckIsFencedByOwner(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		add(t, b.q, 2, "did")
		batch := b.q.Remove(10)
		// Another instance took the operations over (they were reposted and redelivered).
		ops := batch.Ops()
		_, err := st.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{
			{OpID: ops[0].OpID, Suffix: ops[0].Suffix, Type: "create", Request: ops[0].Request, InstanceID: "instance-b", Lifespan: time.Hour},
		})
		require.NoError(t, err)
		err = st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return batch.Ack(ctx, tx, 1) })
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.Len(t, rows(t, st, "instance-b"), 1)
		require.Len(t, rows(t, st, "instance-a"), 1, "the rolled-back Ack deleted nothing")
	})
}

func TestBacklogPushesBack(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, func(c *Config) { c.MaxBacklog = 3 })
		add(t, b.q, 3, "did")
		err := b.q.Add(context.Background(), NewOp{Suffix: "x", Type: "create", Request: []byte(`{"x":1}`)})
		require.ErrorIs(t, err, ErrPushback)
		require.Equal(t, 1.0, testutil.ToFloat64(b.q.m.rejected.WithLabelValues("backlog")))
	})
}

func TestSameOperationIsQueuedOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		op := NewOp{Suffix: "did-1", Type: "create", Request: []byte(`{"same":true}`)}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if err := b.q.Add(ctx, op); err != nil {
					t.Errorf("add: %v", err)
				}
			})
		}
		wg.Wait()
		require.NoError(t, b.q.Add(ctx, op))
		require.Len(t, rows(t, st, "instance-a"), 1)
		require.Equal(t, 1, b.q.Len())
		require.Equal(t, OpIDOf(op.Request), rows(t, st, "instance-a")[0].OpID)
	})
}

func TestDropAnchoredRemovesSecondCopies(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		b.q.dedup = true // what NewCluster sets
		ctx := context.Background()
		ops := add(t, b.q, 3, "did")
		// The first operation was anchored elsewhere (another copy of its message).
		require.NoError(t, st.AnchoredOpsInsert(ctx, 9, []string{OpIDOf(ops[0].Request)}, time.Hour))
		batch := b.q.Remove(10)
		n, err := batch.DropAnchored(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, []string{"did-001", "did-002"}, batch.Suffixes())
		require.Len(t, rows(t, st, "instance-a"), 2)
		require.Equal(t, 2, b.q.Backlog())

		// A copy anchored between the check and the commit makes the anchor transaction fail.
		require.NoError(t, st.AnchoredOpsInsert(ctx, 10, []string{OpIDOf(ops[1].Request)}, time.Hour))
		err = st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return batch.Ack(ctx, tx, 11) })
		require.ErrorIs(t, err, store.ErrConflict)
		require.Len(t, rows(t, st, "instance-a"), 2, "rolled back")
	})
}

func TestAddAfterStopFails(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Open(t, storetest.SQLiteOpener(t)))
	b.stop()
	err := b.q.Add(context.Background(), NewOp{Suffix: "x", Type: "create", Request: []byte("{}")})
	require.ErrorIs(t, err, ErrClosed)
}

func TestAddReportsStoreFailure(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	st.Close() // the database goes away
	err := b.q.Add(context.Background(), NewOp{Suffix: "x", Type: "create", Request: []byte("{}")})
	require.ErrorIs(t, err, ErrUnavailable)
	require.Zero(t, b.q.Len(), "nothing accepted")
}

func TestEmbeddedQueueRecordsNoAnchoredOps(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	ops := add(t, b.q, 1, "did")
	batch := b.q.Remove(10)
	n, err := batch.DropAnchored(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return batch.Ack(ctx, tx, 1) }))
	got, err := st.AnchoredOpsFilter(ctx, []string{OpIDOf(ops[0].Request)})
	require.NoError(t, err)
	require.Empty(t, got, "embedded intake refuses second copies itself")
}

func TestRestoreIsAtomicWithItsCompanionWrite(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		dl, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "op-1", Payload: []byte(`{"r":1}`), Reason: "max attempts", Attempts: 3})
		require.NoError(t, err)
		op := NewOp{OpID: "op-1", Suffix: "did-1", Type: "update", Request: []byte(`{"r":1}`)}

		// The companion write fails: nothing is queued.
		boom := errors.New("boom")
		err = b.q.Restore(ctx, []NewOp{op}, func(context.Context, store.Executor) error { return boom })
		require.ErrorIs(t, err, boom)
		require.Empty(t, rows(t, st, "instance-a"))
		require.Zero(t, b.q.Len())

		require.NoError(t, b.q.Restore(ctx, []NewOp{op}, func(ctx context.Context, tx store.Executor) error {
			return tx.DeadLetterDelete(ctx, dl)
		}))
		require.Len(t, rows(t, st, "instance-a"), 1)
		require.Equal(t, 1, b.q.Len())
		_, err = st.DeadLetterGet(ctx, dl)
		require.ErrorIs(t, err, store.ErrNotFound)

		// Restoring the same operation again does not duplicate it.
		require.NoError(t, b.q.Restore(ctx, []NewOp{op}, nil))
		require.Len(t, rows(t, st, "instance-a"), 1)
		require.Equal(t, 1, b.q.Len())
		batch := b.q.Remove(10)
		require.Equal(t, []string{"did-1"}, batch.Suffixes())
	})
}

func TestSyncPicksUpRowsWrittenElsewhere(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		add(t, b.q, 2, "did")
		inFlight := b.q.Remove(1)
		require.Equal(t, 1, inFlight.Len())
		// The status poller gives a failed anchor's operations back, straight into op_queue.
		_, err := st.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{
			{OpID: "given-back-1", Suffix: "did-x", Type: "update", Request: []byte(`{"x":1}`), InstanceID: "instance-a", Lifespan: time.Hour},
			{OpID: "someone-else", Suffix: "did-y", Type: "update", Request: []byte(`{"y":1}`), InstanceID: "instance-b", Lifespan: time.Hour},
		})
		require.NoError(t, err)
		n, err := b.q.Sync(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "only this instance's new row; not the one in a batch, not the queued one")
		require.Equal(t, 2, b.q.Len())
		require.Equal(t, 3, b.q.Backlog())
		n, err = b.q.Sync(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		// A full pass (every fullSyncEvery) finds nothing new either.
		for range fullSyncEvery {
			n, err = b.q.Sync(ctx)
			require.NoError(t, err)
			require.Zero(t, n)
		}
	})
}

// TestSyncDoesNotAdoptRowsAnchoredDuringItsRead: a full Sync reads a row that is in a batch; the
// batch commits (its rows deleted, its ids settled) before the Sync adopts what it read. The
// row must not come back into the queue: it would be cut into another batch whose Ack finds it
// gone (a batch failing with ErrLeaseLost at every full sync, as seen under load).
func TestSyncDoesNotAdoptRowsAnchoredDuringItsRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		add(t, b.q, 2, "did")
		batch := b.q.Remove(10)
		require.Equal(t, 2, batch.Len())
		for range fullSyncEvery - 1 { // incremental passes: they read only rows above maxSeen
			_, err := b.q.Sync(ctx)
			require.NoError(t, err)
		}
		b.q.afterSyncRead = func() {
			require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return batch.Ack(ctx, tx, 1) }))
			batch.Committed()
		}
		n, err := b.q.Sync(ctx) // the full pass
		require.NoError(t, err)
		require.Zero(t, n, "rows anchored while the pass read are not adopted")
		require.Zero(t, b.q.Len())
		require.Zero(t, b.q.Backlog())
	})
}
