package witness

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// monitorUntil runs the status monitor until one run's result satisfies done, and returns
// that result; every run before it must have checked nothing (the anchor was not due yet).
func (o *origin) monitorUntil(done func(MonitorResult) bool) MonitorResult {
	o.t.Helper()
	var last MonitorResult
	anchordtest.Eventually(o.t, 10*time.Second, 10*time.Millisecond, func() bool {
		res, err := o.w.runOnce(context.Background())
		require.NoError(o.t, err)
		last = res
		if done(res) {
			return true
		}
		require.Zero(o.t, res.Checked, "an earlier run acted: %+v", res)
		return false
	}, "monitor result")
	return last
}

func (o *origin) monitored(outcome string) float64 {
	return testutil.ToFloat64(o.w.m.monitored.WithLabelValues(outcome))
}

func fast(delay time.Duration) originOption {
	return func(c *Config) { c.GracePeriod, c.MaxWitnessDelay = 50*time.Millisecond, delay }
}

func TestMonitorWaitsForTheGracePeriod(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	o := newOrigin(t, st, func(c *Config) { c.GracePeriod = time.Hour })
	o.witness("b")
	o.witness("c")
	o.setPolicy("OutOf(1,system)")
	a := o.anchor(1)
	before := o.rows(a.Seq)

	res, err := o.w.runOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, MonitorResult{}, res)
	require.Len(t, o.offers(), 1, "no re-offer before the grace period")
	require.Equal(t, before, o.rows(a.Seq))
	require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)
	require.Zero(t, testutil.CollectAndCount(o.w.m.monitored))
}

// TestMonitorOffersAnAnchorThatAskedNobodyAtItsNextRun: an anchor written while no witness is
// eligible asks nobody, so the monitor has nobody to give the grace period (an hour here): it
// looks at the anchor at every run, and offers it as soon as a witness is there.
func TestMonitorOffersAnAnchorThatAskedNobodyAtItsNextRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		o := newOrigin(t, st, func(c *Config) { c.GracePeriod, c.MaxWitnessDelay = time.Hour, time.Hour })
		b := o.witness("b")
		o.setPolicy("OutOf(2,system)")
		a := o.anchor(1)
		require.Empty(t, o.offers(), "too few witnesses: nobody asked")

		for range 2 {
			res, err := o.w.runOnce(context.Background())
			require.NoError(t, err)
			require.Equal(t, MonitorResult{Checked: 1, Waiting: 1}, res, "looked at again at each run")
		}
		c := o.witness("c")
		res, err := o.w.runOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, MonitorResult{Checked: 1, Reoffered: 1}, res)
		require.Len(t, o.offers(), 1)
		require.True(t, o.rows(a.Seq)[b.actor].Selected)
		require.True(t, o.rows(a.Seq)[c.actor].Selected)

		// Now someone was asked: the grace period applies again.
		res, err = o.w.runOnce(context.Background())
		require.NoError(t, err)
		require.Equal(t, MonitorResult{}, res)
	})
}

func TestMonitorReoffersThenWaits(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		o := newOrigin(t, st, fast(time.Hour))
		b, c := o.witness("b"), o.witness("c")
		o.setPolicy("OutOf(1,system)")
		a := o.anchor(1)
		asked, unasked := splitSelected(o, a.Seq, b, c)
		require.Len(t, asked, 1)
		silent, next := asked[0], unasked[0]
		first := o.offerTo(silent.actor)

		res := o.monitorUntil(func(r MonitorResult) bool { return r.Checked > 0 })
		require.Equal(t, MonitorResult{Checked: 1, Reoffered: 1}, res)
		offers := o.offers()
		require.Len(t, offers, 2)
		again := offers[1]
		require.Equal(t, activity.Strings{next.actor, activity.PublicIRI}, again.To, "offered to the witness not asked yet only")
		require.Equal(t, first.Object.Linkset.Linkset[0].Anchor, again.Object.Linkset.Linkset[0].Anchor, "the same anchor")
		rows := o.rows(a.Seq)
		require.True(t, rows[next.actor].Selected)
		require.Equal(t, again.ID, rows[next.actor].OfferID)
		require.True(t, rows[silent.actor].Selected, "the silent witness may still answer")
		require.Equal(t, first.ID, rows[silent.actor].OfferID)
		require.Equal(t, 1.0, o.offersMetric("reselect"))
		require.Equal(t, 1.0, o.offersMetric("first"))
		require.Equal(t, 1.0, o.monitored("reoffered"))
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)

		// Both asked, both silent, long before the deadline: the anchor waits.
		res = o.monitorUntil(func(r MonitorResult) bool { return r.Checked > 0 })
		require.Equal(t, MonitorResult{Checked: 1, Waiting: 1}, res)
		require.Len(t, o.offers(), 2, "nobody left to ask")
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)
		require.Equal(t, 1.0, o.monitored("waiting"))
		require.Zero(t, testutil.ToFloat64(o.w.m.failed))
		require.Empty(t, o.requeuedSeqs())

		// The late answer of the first witness still completes it.
		got, err := o.deliver(silent, acceptOpts{})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, got)
		require.Equal(t, store.AnchorCompleted, o.anchorRow(a.Seq).Status)
	})
}

const requeueMark = "test_requeued_anchor"

func TestMonitorFailsAndRequeuesInOneTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		o := newOrigin(t, st, fast(200*time.Millisecond))
		o.witness("b")
		o.setPolicy("OutOf(1,system)")
		a := o.anchor(3)

		// A RequeueFunc that fails after writing through tx: the failure rolls back with it.
		errRequeue := errors.New("queue unavailable")
		o.mu.Lock()
		o.requeue = func(ctx context.Context, tx store.Executor, failed store.Anchor) error {
			require.Equal(t, store.AnchorFailed, failed.Status)
			if err := tx.SettingPut(ctx, requeueMark, []byte(failed.AnchorString)); err != nil {
				return err
			}
			return errRequeue
		}
		o.mu.Unlock()
		var runErr error
		anchordtest.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
			_, runErr = o.w.runOnce(ctx)
			return runErr != nil
		})
		require.ErrorIs(t, runErr, errRequeue)
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status, "the failure rolled back with the requeue")
		_, err := st.SettingGet(ctx, requeueMark)
		require.ErrorIs(t, err, store.ErrNotFound, "nor is the requeue's write kept")
		require.Zero(t, testutil.ToFloat64(o.w.m.failed))
		require.Zero(t, testutil.ToFloat64(o.w.m.requeuedOps))
		require.Zero(t, o.monitored("failed"))
		require.Empty(t, o.requeuedSeqs())
		due, err := st.WitnessAnchorsDue(ctx, 10)
		require.NoError(t, err)
		require.Len(t, due, 1, "still due: the next run tries again")

		// The next run, with the queue back, fails it and requeues in the same transaction.
		o.mu.Lock()
		o.requeue = func(ctx context.Context, tx store.Executor, failed store.Anchor) error {
			return tx.SettingPut(ctx, requeueMark, []byte(failed.AnchorString))
		}
		o.mu.Unlock()
		res, err := o.w.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, MonitorResult{Checked: 1, Failed: 1}, res)
		row := o.anchorRow(a.Seq)
		require.Equal(t, store.AnchorFailed, row.Status)
		require.NotEmpty(t, row.Error)
		require.Empty(t, row.Hashlink, "a failed anchor gets no hashlink")
		mark, err := st.SettingGet(ctx, requeueMark)
		require.NoError(t, err)
		require.Equal(t, a.AnchorString, string(mark), "the requeue committed with the failure")
		require.Equal(t, []int64{a.Seq}, o.requeuedSeqs())
		require.Equal(t, 1.0, testutil.ToFloat64(o.w.m.failed))
		require.Equal(t, 3.0, testutil.ToFloat64(o.w.m.requeuedOps))
		require.Equal(t, 1.0, o.monitored("failed"))

		res, err = o.w.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, MonitorResult{}, res, "a failed anchor is not looked at again")
	})
}

func TestMonitorCompletesUnderAChangedPolicy(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		o := newOrigin(t, st, fast(time.Hour))
		b, c := o.witness("b"), o.witness("c")
		o.setPolicy("OutOf(2,system)")
		a := o.anchor(1)
		got, err := o.deliver(b, acceptOpts{})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, got)
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)

		o.setPolicy("OutOf(1,system)")
		res := o.monitorUntil(func(r MonitorResult) bool { return r.Checked > 0 })
		require.Equal(t, MonitorResult{Checked: 1, Completed: 1}, res)
		row := o.anchorRow(a.Seq)
		require.Equal(t, store.AnchorCompleted, row.Status)
		require.NotEmpty(t, row.Hashlink)
		require.Equal(t, []int64{a.Seq}, o.completedSeqs())
		require.Equal(t, 1.0, testutil.ToFloat64(o.w.m.completed))
		require.Equal(t, 1.0, o.monitored("completed"))
		require.Len(t, o.offers(), 1, "nothing offered again")
		require.Nil(t, o.rows(a.Seq)[c.actor].Proof)
	})
}
