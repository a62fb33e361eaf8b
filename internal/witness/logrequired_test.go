package witness

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
)

// logOffered appends to l the entry of the credential offered to actor, as a witness with a
// log does before it signs, and returns its index once a published checkpoint covers it.
func (o *origin) logOffered(l *testLog, actor string) uint64 {
	o.t.Helper()
	link := o.offerTo(actor).Object.Linkset.Linkset[0]
	content, err := link.Replies[0].Content(vc.MaxDocumentSize)
	require.NoError(o.t, err)
	c, err := vc.ParseCredential(content)
	require.NoError(o.t, err)
	entry, err := LogEntry(c)
	require.NoError(o.t, err)
	ctx := anchordtest.Context(o.t, 30*time.Second)
	i, err := l.Append(ctx, entry)
	require.NoError(o.t, err)
	_, err = l.AwaitCheckpoint(ctx, i)
	require.NoError(o.t, err)
	return i
}

func hasLog(c *Config) { c.HasLog = func(string) bool { return true } }

// TestLogRequiredCountsALoggedProofOnlyOnceVerified: under "OutOf(1,system) LogRequired", B's
// proof with a log promise completes the anchor at once when B's log already shows the entry
// (checked as the proof arrives); when the log cannot be read then, the proof is recorded but
// does not count, and the anchor completes when the proof monitor verifies the entry. Without
// LogRequired the same proof counts at once and its promise is left to the monitor.
func TestLogRequiredCountsALoggedProofOnlyOnceVerified(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := anchordtest.Context(t, time.Minute)
		l := servedLog(t)
		o := newOrigin(t, st, hasLog)
		b := o.witness("b")
		require.Equal(t, logWitness, b.actor, "the served log is B's")
		o.setPolicy("OutOf(1,system) LogRequired")
		mon, err := NewLogProofs(LogProofConfig{Logger: anchordtest.Logger(t), Registerer: o.reg}, st, l.directory(t, logOrigin), o.w)
		require.NoError(t, err)
		verified := func() float64 { return testutil.ToFloat64(mon.settled.WithLabelValues("verified")) }

		// B's log already covers the entry: verified on arrival, the anchor completes at once.
		first := o.anchor(1)
		idx := o.logOffered(l, b.actor)
		outcome, err := o.deliver(b, acceptOpts{log: &activity.ReceiptLog{Origin: logOrigin, Index: idx}})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, outcome)
		require.Equal(t, store.AnchorCompleted, o.anchorRow(first.Seq).Status)
		require.NotNil(t, o.rows(first.Seq)[b.actor].PromiseVerifiedAt, "settled as the proof arrived")
		require.Equal(t, 1.0, verified())
		res, err := mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{}, res, "nothing left for the monitor")

		// B's log cannot be read when its proof arrives: recorded, not counted.
		second := o.anchor(1)
		idx = o.logOffered(l, b.actor)
		l.srv.Close()
		outcome, err = o.deliver(b, acceptOpts{log: &activity.ReceiptLog{Origin: logOrigin, Index: idx}})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, outcome)
		row := o.rows(second.Seq)[b.actor]
		require.NotNil(t, row.Proof)
		require.Nil(t, row.PromiseVerifiedAt)
		require.Nil(t, row.PromiseBrokenAt)
		require.Equal(t, store.AnchorPending, o.anchorRow(second.Seq).Status, "a logged proof not verified yet does not count")
		checked, err := o.w.runOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, checked.Completed, "nor for the status monitor")
		require.Equal(t, []int64{first.Seq}, o.completedSeqs())

		// The monitor reads the log again and verifies the entry: the anchor completes then.
		l.serve(t)
		mon.peers = l.directory(t, logOrigin)
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Verified: 1}, res)
		require.Equal(t, store.AnchorCompleted, o.anchorRow(second.Seq).Status)
		require.Equal(t, []int64{first.Seq, second.Seq}, o.completedSeqs(), "the observer is woken")
		require.Equal(t, 2.0, verified())
		wa, err := st.WitnessAnchorGet(ctx, second.Seq)
		require.NoError(t, err)
		cred, err := Credential(ctx, st, wa)
		require.NoError(t, err)
		require.Len(t, cred.Proofs(), 2, "ours and B's")

		// Without LogRequired a promise no checkpoint covers yet does not hold the proof back.
		o.setPolicy("OutOf(1,system)")
		third := o.anchor(1)
		cp, err := l.Checkpoint(ctx)
		require.NoError(t, err)
		outcome, err = o.deliver(b, acceptOpts{log: &activity.ReceiptLog{Origin: logOrigin, Index: cp.Size + 100}})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, outcome)
		require.Equal(t, store.AnchorCompleted, o.anchorRow(third.Seq).Status, "the proof counts at once")
		row = o.rows(third.Seq)[b.actor]
		require.NotNil(t, row.Promise, "its promise is recorded for the monitor")
		require.Nil(t, row.PromiseVerifiedAt)
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Waiting: 1}, res)
		require.Equal(t, 2.0, verified())
	})
}

// TestAnchorUnderAnOpenLogPromiseIsNotFailed: under LogRequired, an anchor whose one witness
// answered with a promise the monitor has not judged yet is past its time to fail; the status
// monitor waits for the verdict instead of failing it, and fails it (giving its operations
// back) once the promise is broken past its deadline and no other witness is left.
func TestAnchorUnderAnOpenLogPromiseIsNotFailed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := anchordtest.Context(t, time.Minute)
		l := servedLog(t)
		o := newOrigin(t, st, hasLog, func(c *Config) { c.MaxWitnessDelay, c.GracePeriod = time.Millisecond, time.Millisecond })
		b := o.witness("b")
		o.setPolicy("OutOf(1,system) LogRequired")
		mon, err := NewLogProofs(LogProofConfig{Logger: anchordtest.Logger(t), Registerer: o.reg}, st, l.directory(t, logOrigin), o.w)
		require.NoError(t, err)

		a := o.anchor(1)
		cp, err := l.Checkpoint(ctx)
		require.NoError(t, err)
		// An index the log does not cover: the monitor waits for the deadline (about a minute).
		outcome, err := o.deliver(b, acceptOpts{log: &activity.ReceiptLog{Origin: logOrigin, Index: cp.Size + 100}})
		require.NoError(t, err)
		require.Equal(t, ProofAdded, outcome)
		time.Sleep(10 * time.Millisecond) // past MaxWitnessDelay and the grace period
		checked, err := o.w.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, MonitorResult{Checked: 1, Waiting: 1}, checked)
		require.Equal(t, store.AnchorPending, o.anchorRow(a.Seq).Status)

		// The deadline passes with no checkpoint covering the index: broken, and with no other
		// witness to ask the anchor fails.
		mon.now = func() time.Time { return time.Now().Add(time.Hour) }
		res, err := mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Broken: 1}, res)
		checked, err = o.w.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, MonitorResult{Checked: 1, Failed: 1}, checked)
		require.Equal(t, []int64{a.Seq}, o.requeuedSeqs(), "its operations are given back")
	})
}
