package expiry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/taskmgr"
)

type testBundle struct {
	svc *Service
	mgr *taskmgr.Manager
	st  store.Store
	reg *prometheus.Registry
}

func setup(t *testing.T, st store.Store, mutate ...func(*Config)) *testBundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	mgr, err := taskmgr.New(taskmgr.Config{InstanceID: "instance-a", CheckInterval: 100 * time.Millisecond,
		Logger: anchordtest.Logger(t), Registerer: reg}, st)
	require.NoError(t, err)
	cfg := Config{Interval: 100 * time.Millisecond, BatchSize: 5, MaxBatches: 10, Logger: anchordtest.Logger(t), Registerer: reg}
	for _, m := range mutate {
		m(&cfg)
	}
	svc, err := New(cfg, st, mgr.Fence)
	require.NoError(t, err)
	require.NoError(t, mgr.Register(taskmgr.Task{ID: TaskID, Interval: svc.Interval(), Run: svc.Expire}))
	return &testBundle{svc: svc, mgr: mgr, st: st, reg: reg}
}

// startRun takes the data-expiry permit for the bundle's instance and starts a run, as the
// manager would, and returns its term.
func (b *testBundle) startRun(t *testing.T) int64 {
	t.Helper()
	ctx := context.Background()
	p, ok, err := b.st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: TaskID, Holder: b.mgr.InstanceID(), StaleAfter: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	_, started, err := b.st.TaskPermitStart(ctx, store.TaskPermitStartParams{TaskID: TaskID, Holder: b.mgr.InstanceID(), Term: p.Term})
	require.NoError(t, err)
	require.True(t, started)
	return p.Term
}

func queueOps(t *testing.T, st store.Store, prefix string, n int, lifespan time.Duration) []store.OpQueueInsertParams {
	t.Helper()
	var ops []store.OpQueueInsertParams
	for i := range n {
		ops = append(ops, store.OpQueueInsertParams{
			OpID: fmt.Sprintf("%s-%02d", prefix, i), Suffix: fmt.Sprintf("%s-suffix-%02d", prefix, i), Type: "update",
			Request: []byte(fmt.Sprintf(`{"type":"update","n":%d}`, i)), InstanceID: "owner", Lifespan: lifespan,
		})
	}
	_, err := st.OpQueueUpsertMany(context.Background(), ops)
	require.NoError(t, err)
	return ops
}

func TestExpiredOperationsAreParkedWithHistory(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		b := setup(t, st)
		expired := queueOps(t, st, "old", 12, -time.Minute)
		queueOps(t, st, "new", 3, time.Hour)
		rows, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "owner", Limit: 1})
		require.NoError(t, err)
		history := []string{"attempt 1 at 2026-01-01T00:00:00Z: witness timeout"}
		require.NoError(t, st.OpQueueRetry(ctx, store.OpQueueRetryParams{
			ID: rows[0].ID, InstanceID: "owner", Attempts: 1, History: history, AvailableAt: time.Now(),
		}))

		res, err := b.svc.runOnce(ctx, b.startRun(t))
		require.NoError(t, err)
		require.Equal(t, tableResult{Removed: 12, Parked: 12, Batches: 3}, res.Tables["op_queue"], "batches of 5, 5 and 2")

		left, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "owner", Limit: 100})
		require.NoError(t, err)
		require.Len(t, left, 3, "unexpired operations stay queued")
		for _, op := range left {
			require.Contains(t, op.OpID, "new-")
		}
		parked, err := st.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterOperation, Limit: 100})
		require.NoError(t, err)
		require.Len(t, parked, 12, "every expired operation is parked, none deleted silently")
		byRef := map[string]store.DeadLetter{}
		for _, d := range parked {
			byRef[d.Ref] = d
		}
		for _, op := range expired {
			d, ok := byRef[op.OpID]
			require.True(t, ok, op.OpID)
			require.Equal(t, store.DeadLetterReasonExpired, d.Reason)
			require.Equal(t, op.Request, d.Payload)
		}
		d := byRef["old-00"]
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, history, d.History[:1])
		require.Contains(t, d.History[1], "expired at ")
		require.Equal(t, 12.0, testutil.ToFloat64(b.svc.m.parked.WithLabelValues("op_queue")))
		require.Equal(t, 12.0, testutil.ToFloat64(b.svc.m.expired.WithLabelValues("op_queue")))
	})
}

func TestDisposableRowsDeletedInBoundedBatches(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			sc := storetest.OpenScratch(t, backend)
			ctx := context.Background()
			_, err := sc.Exec(ctx, storetest.ScratchExpiryDDL[backend])
			require.NoError(t, err)
			storetest.InsertScratchExpiring(t, sc, 23, "old", time.Now().Add(-time.Second))
			storetest.InsertScratchExpiring(t, sc, 4, "young", time.Now().Add(time.Hour))
			b := setup(t, sc.Store, func(c *Config) { c.MaxBatches = 2 })
			require.NoError(t, b.svc.Register(Disposable("expiry_scratch", "expires_at")))
			term := b.startRun(t)

			var removed []int64
			for {
				res, err := b.svc.runOnce(ctx, term)
				require.NoError(t, err)
				tr := res.Tables["expiry_scratch"]
				removed = append(removed, tr.Removed)
				if !tr.Capped {
					break
				}
				require.Equal(t, 2, tr.Batches, "at most MaxBatches per run")
			}
			require.Equal(t, []int64{10, 10, 3}, removed)
			require.Zero(t, storetest.CountScratch(t, sc, "old"))
			require.Equal(t, int64(4), storetest.CountScratch(t, sc, "young"), "rows not yet expired are untouched")
			require.Equal(t, 23.0, testutil.ToFloat64(b.svc.m.expired.WithLabelValues("expiry_scratch")))
			require.Zero(t, testutil.ToFloat64(b.svc.m.parked.WithLabelValues("expiry_scratch")))
			require.Equal(t, 2.0, testutil.ToFloat64(b.svc.m.capped.WithLabelValues("expiry_scratch")))
			dead, err := sc.Store.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 10})
			require.NoError(t, err)
			require.Empty(t, dead, "disposable rows are not parked")
		})
	}
}

// TestHandledInboxActivitiesExpire: registered as the daemon registers it, ap_inbox loses the
// activities handled longer ago than their retention, and keeps the rest (queued, parked, or
// handled recently).
func TestHandledInboxActivitiesExpire(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		b := setup(t, st)
		require.NoError(t, b.svc.Register(Disposable("ap_inbox", "expires_at")))
		for _, id := range []string{"old", "recent", "queued", "parked"} {
			_, ok, err := st.ActivityInboxInsert(ctx, store.ActivityInboxInsertParams{ActivityID: "https://b.example/activities/" + id,
				Actor: "https://b.example/x", From: "https://b.example/x", Type: "Like", Body: []byte("{}"), Source: store.InboxSourceLive})
			require.NoError(t, err)
			require.True(t, ok)
		}
		rows, err := st.ActivityInboxClaim(ctx, store.ActivityClaimParams{Owner: "p", Limit: 10, TTL: time.Hour})
		require.NoError(t, err)
		require.Len(t, rows, 4)
		for _, r := range rows {
			switch r.ActivityID {
			case "https://b.example/activities/old":
				require.NoError(t, st.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: r.Claim(), Keep: time.Microsecond}))
			case "https://b.example/activities/recent":
				require.NoError(t, st.ActivityInboxComplete(ctx, store.ActivityCompleteParams{Claim: r.Claim(), Keep: time.Hour}))
			case "https://b.example/activities/queued":
				require.NoError(t, st.ActivityInboxRetry(ctx, store.ActivityRetryParams{Claim: r.Claim(), Error: "e", Backoff: time.Hour}))
			default:
				require.NoError(t, st.ActivityInboxPark(ctx, store.ActivityRetryParams{Claim: r.Claim(), Error: "e"}))
			}
		}
		res, err := b.svc.runOnce(ctx, b.startRun(t))
		require.NoError(t, err)
		require.Equal(t, int64(1), res.Tables["ap_inbox"].Removed)
		left, err := st.ActivityInboxList(ctx, store.ActivityPageParams{Limit: 100})
		require.NoError(t, err)
		var ids []string
		for _, r := range left {
			ids = append(ids, r.ActivityID)
		}
		require.ElementsMatch(t, []string{"https://b.example/activities/recent", "https://b.example/activities/queued",
			"https://b.example/activities/parked"}, ids)
	})
}

func TestRegisterRefusesDurableTablesOddNamesAndDuplicates(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Open(t, storetest.SQLiteOpener(t)))
	for _, tbl := range []Table{
		Disposable("op_queue", "expires_at"),
		Disposable("dead_letters", "created_at"),
		Disposable("anchors", "created_at"),
		Disposable("Sessions", "expires_at"),
		Disposable("sessions", "expires_at; DROP TABLE anchors"),
		Disposable("", "expires_at"),
	} {
		require.Error(t, b.svc.Register(tbl), "%+v", tbl)
	}
	require.NoError(t, b.svc.Register(Disposable("sessions", "expires_at")))
	require.ErrorContains(t, b.svc.Register(Disposable("sessions", "expires_at")), "already registered")
}

func TestOneTableFailingDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		b := setup(t, st)
		require.NoError(t, b.svc.Register(Disposable("no_such_table", "expires_at")))
		queueOps(t, st, "old", 3, -time.Minute)
		res, err := b.svc.runOnce(ctx, b.startRun(t))
		require.ErrorContains(t, err, "no_such_table")
		require.Equal(t, int64(3), res.Tables["op_queue"].Parked)
		require.Error(t, res.Tables["no_such_table"].Err)
		require.Equal(t, 1.0, testutil.ToFloat64(b.svc.m.failures.WithLabelValues("no_such_table")))
	})
}

func TestRunWithALostPermitRemovesNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		b := setup(t, st)
		queueOps(t, st, "old", 3, -time.Minute)
		term := b.startRun(t)
		// Another instance took the permit over.
		future := time.Now().Add(time.Hour)
		_, ok, err := st.TaskPermitAcquire(ctx, store.TaskPermitAcquireParams{TaskID: TaskID, Holder: "b", StaleAfter: time.Minute, Now: &future})
		require.NoError(t, err)
		require.True(t, ok)

		_, err = b.svc.runOnce(ctx, term)
		require.ErrorIs(t, err, store.ErrLeaseLost)
		left, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "owner", Limit: 10})
		require.NoError(t, err)
		require.Len(t, left, 3)
		dead, err := st.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 10})
		require.NoError(t, err)
		require.Empty(t, dead)
		require.Zero(t, testutil.ToFloat64(b.svc.m.failures.WithLabelValues("op_queue")), "a lost permit is not a failure")
	})
}

func TestRunsAsATaskOfTheManager(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		// A 600 ms takeover threshold: short runs, yet a loaded machine does not make the
		// trust window cancel them all.
		b := setup(t, st, func(c *Config) { c.Interval = 500 * time.Millisecond })
		b.svc.sig.ran.Init(t)
		queueOps(t, st, "old", 7, -time.Minute)
		queueOps(t, st, "soon", 2, 300*time.Millisecond)

		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- b.mgr.Run(runCtx) }()
		defer func() {
			cancel()
			require.NoError(t, anchordtest.WaitOrTimeout(t, done, 20*time.Second))
		}()
		var parked int64
		deadline := time.Now().Add(30 * time.Second)
		for parked < 9 {
			parked += b.svc.sig.ran.WaitOrTimeout(t, 20*time.Second).Tables["op_queue"].Parked
			require.True(t, time.Now().Before(deadline), "only %d of 9 operations parked", parked)
		}
		require.Equal(t, int64(9), parked, "the soon-expiring rows were parked by a later run, once expired")
		dead, err := st.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 100})
		require.NoError(t, err)
		require.Len(t, dead, 9)
	})
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	mgr, err := taskmgr.New(taskmgr.Config{InstanceID: "a"}, st)
	require.NoError(t, err)
	_, err = New(Config{BatchSize: -1}, st, mgr.Fence)
	require.Error(t, err)
	_, err = New(Config{}, st, nil)
	require.ErrorContains(t, err, "fence")
	svc, err := New(Config{}, st, mgr.Fence)
	require.NoError(t, err)
	require.Equal(t, IntervalDefault, svc.Interval())
	require.Equal(t, BatchSizeDefault, svc.cfg.BatchSize)
	require.Equal(t, MaxBatchesDefault, svc.cfg.MaxBatches)
}
