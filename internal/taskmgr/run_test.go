package taskmgr

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestTrust(t *testing.T) {
	t.Parallel()
	m := &Manager{cfg: Config{CheckInterval: 10 * time.Second}}
	refresh, window := m.trust(Task{Interval: time.Minute})
	require.Equal(t, 10*time.Second, refresh, "CheckInterval when the threshold is long")
	require.Equal(t, 56*time.Second, window, "70 s threshold less a fifth")
	refresh, window = m.trust(Task{Interval: time.Second})
	require.Equal(t, 11*time.Second/3, refresh, "a third of the threshold when it is short")
	require.Equal(t, 8800*time.Millisecond, window)
	require.Less(t, 2*refresh, window, "a failed refresh is survivable")
}

func TestResultLabels(t *testing.T) {
	t.Parallel()
	live := context.Background()
	stopped, stop := context.WithCancelCause(live)
	stop(nil)
	lost, lose := context.WithCancelCause(live)
	lose(ErrPermitLost)
	untrusted, distrust := context.WithCancelCause(live)
	distrust(ErrPermitUntrusted)
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{live, nil, resultOK},
		{stopped, nil, resultOK},
		{live, context.Canceled, resultError},
		{live, &panicError{value: "x"}, resultPanic},
		{stopped, context.Canceled, resultStopped},
		{lost, context.Canceled, resultLost},
		{lost, ErrPermitLost, resultLost},
		{untrusted, context.Canceled, resultLost},
		{stopped, context.DeadlineExceeded, resultError},
	} {
		require.Equal(t, tc.want, result(tc.ctx, tc.err), "%v", tc.err)
	}
}

// TestUntrustedPermitCancelsRun stalls the database for the holder (a transaction holds the
// permit row) and checks that the run is cancelled before the permit could be taken over, and
// that the holder keeps its permit when the stall ends without a takeover.
func TestUntrustedPermitCancelsRun(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t)
	st := storetest.Open(t, func(ctx context.Context) (store.Store, error) {
		return pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 4, Logger: anchordtest.Logger(t)})
	})
	ctx := context.Background()
	const check, interval = 200 * time.Millisecond, 2800 * time.Millisecond
	type cancelled struct {
		cause error
		at    time.Time
	}
	causes := make(chan cancelled, 1)
	running := make(chan struct{}, 1)
	a := newManager(t, st, "a", check)
	require.NoError(t, a.Register(Task{ID: "t", Interval: interval, Run: func(ctx context.Context, term int64) error {
		running <- struct{}{}
		<-ctx.Done()
		causes <- cancelled{context.Cause(ctx), time.Now()}
		return ctx.Err()
	}}))
	a.start(t)
	anchordtest.WaitOrTimeout(t, running, 20*time.Second)

	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT 1 FROM task_permits WHERE task_id = 't' FOR UPDATE`)
	require.NoError(t, err)
	locked := time.Now()

	got := anchordtest.WaitOrTimeout(t, causes, 20*time.Second)
	require.ErrorIs(t, got.cause, ErrPermitUntrusted)
	// The last refresh that succeeded was sent before the lock, so the run stopped trusting
	// its permit before another instance could have found it stale.
	require.Less(t, got.at.Sub(locked), check+interval)
	_, window := a.trust(Task{Interval: interval})
	t.Logf("run cancelled %s after the database stalled (trust window %s, takeover threshold %s)",
		got.at.Sub(locked).Round(time.Millisecond), window, check+interval)
	require.NoError(t, tx.Rollback(ctx))

	out := a.sig.finished.WaitOrTimeout(t, 20*time.Second)
	require.True(t, out.Untrusted)
	require.False(t, out.Lost, "nobody took the permit over")
	require.Equal(t, resultLost, out.Result)
	anchordtest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		p, err := st.TaskPermitGet(ctx, "t")
		return err == nil && p.Status == store.TaskStatusIdle && p.Holder == "a" && !p.LastRunAt.IsZero()
	}, "the run is finished (at once or by the next check) and a keeps its permit")
	require.Equal(t, 1.0, testutil.ToFloat64(a.m.losses.WithLabelValues("t", lossUntrusted)))
	require.Equal(t, 1.0, testutil.ToFloat64(a.m.held.WithLabelValues("t")))
}
