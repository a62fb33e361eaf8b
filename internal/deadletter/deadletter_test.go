package deadletter

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/mempubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

type testBundle struct {
	st      store.Store
	q       *opqueue.Queue
	pending *intake.Pending
	ps      *mempubsub.PubSub
	svc     *Service
}

func setup(t *testing.T, st store.Store) *testBundle {
	t.Helper()
	q, err := opqueue.New(opqueue.Config{InstanceID: "i"}, st)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	broker := mempubsub.NewBroker(pubsub.Topics...)
	ps, err := mempubsub.New(mempubsub.Config{
		Broker: broker, ParkFunc: ParkFunc(st),
		Redelivery: pubsub.RedeliveryConfig{MaxAttempts: 2, InitialInterval: time.Millisecond, MaxInterval: time.Millisecond},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ps.Close() })
	pending := intake.NewPending(0)
	svc := New(Config{Profile: sidetree.DefaultProfile(), Logger: anchordtest.Logger(t)}, st, q.Restore, pendingReserver{pending}, ps)
	return &testBundle{st: st, q: q, pending: pending, ps: ps, svc: svc}
}

// pendingReserver reserves in memory, as intake.Service does embedded.
type pendingReserver struct{ p *intake.Pending }

func (r pendingReserver) Reserve(_ context.Context, suffix, opID string) bool {
	return r.p.Reserve(suffix, opID)
}
func (r pendingReserver) Unreserve(_ context.Context, suffix, opID string) {
	r.p.Release([]store.DIDPendingKey{{Suffix: suffix, OpID: opID}})
}

func TestRetryOperationRequeuesAndDeletesTheRecord(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		id, req, err := wallet.New(wallet.Config{}).Create()
		require.NoError(t, err)
		dl, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "op-7", Payload: req, Reason: "max attempts reached", Attempts: 30})
		require.NoError(t, err)

		// While the DID has an operation pending, the retry must wait.
		require.True(t, b.pending.Reserve(id.Suffix, "another-op"))
		require.ErrorIs(t, b.svc.Retry(ctx, dl), ErrBusy)
		b.pending.Release([]store.DIDPendingKey{{Suffix: id.Suffix, OpID: "another-op"}})

		require.NoError(t, b.svc.Retry(ctx, dl))
		require.Equal(t, 1, b.q.Len())
		rows, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "i", Limit: 10})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "op-7", rows[0].OpID, "the operation keeps its id")
		require.Equal(t, id.Suffix, rows[0].Suffix)
		_, err = st.DeadLetterGet(ctx, dl)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.False(t, b.pending.Reserve(id.Suffix, "another-op"), "pending again until anchored")

		require.ErrorIs(t, b.svc.Retry(ctx, dl), ErrNotFound)
	})
}

func TestRetryRefusesWhatCannotGoBack(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	bad, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "x", Payload: []byte(`{"type":"create"}`), Reason: "r", Attempts: 1})
	require.NoError(t, err)
	require.ErrorIs(t, b.svc.Retry(ctx, bad), ErrNotRetryable)
	odd, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: "mystery", Ref: "y", Payload: []byte("{}"), Reason: "r", Attempts: 1})
	require.NoError(t, err)
	require.ErrorIs(t, b.svc.Retry(ctx, odd), ErrNotRetryable)
	// Both records are still there for an operator to look at.
	list, err := b.svc.List(ctx, store.DeadLetterListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 2)
}

func TestParkedMessageIsRecordedAndRetried(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// A handler that fails for good parks the message into dead_letters through ParkFunc.
	var healthy atomic.Bool
	got := make(chan *pubsub.Message, 10)
	done := make(chan error, 1)
	go func() {
		done <- b.ps.Subscribe(ctx, pubsub.TopicAnchor, 1, func(_ context.Context, m *pubsub.Message) error {
			if !healthy.Load() {
				return pubsub.Permanent(errors.New("observer cannot read this anchor"))
			}
			got <- m
			return nil
		})
	}()
	require.NoError(t, b.ps.Publish(ctx, pubsub.TopicAnchor, &pubsub.Message{ID: "m-1", Headers: map[string]string{"k": "v"}, Body: []byte("anchor 42")}))
	var list []store.DeadLetter
	anchordtest.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		var err error
		list, err = b.svc.List(ctx, store.DeadLetterListParams{Kind: store.DeadLetterMessage, Limit: 10})
		return err == nil && len(list) == 1
	})
	d := list[0]
	require.Equal(t, "m-1", d.Ref)
	require.Equal(t, pubsub.TopicAnchor, d.Topic)
	require.Contains(t, d.Reason, "observer cannot read this anchor")

	healthy.Store(true)
	require.NoError(t, b.svc.Retry(ctx, d.ID))
	m := anchordtest.WaitOrTimeout(t, got, 10*time.Second)
	require.Equal(t, "m-1", m.ID)
	require.Equal(t, "v", m.Headers["k"])
	require.Equal(t, []byte("anchor 42"), m.Body)
	_, err := st.DeadLetterGet(ctx, d.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	cancel()
	require.NoError(t, <-done)
}

func TestDrop(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	id, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: store.DeadLetterOperation, Ref: "x", Payload: []byte("{}"), Reason: "r", Attempts: 1})
	require.NoError(t, err)
	require.NoError(t, b.svc.Drop(ctx, id))
	require.ErrorIs(t, b.svc.Drop(ctx, id), ErrNotFound)
}

// TestRetryOfAnotherKindRunsItsPathInTheDeletingTransaction: a kind registered in Config.Retry
// is re-armed in the transaction that deletes the record; a failure keeps the record.
func TestRetryOfAnotherKindRunsItsPathInTheDeletingTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		var rearmed []string
		fail := true
		svc := New(Config{Retry: map[string]KindRetryFunc{
			"widget": func(ctx context.Context, tx store.Executor, d store.DeadLetter) error {
				if fail {
					return errors.New("not now")
				}
				rearmed = append(rearmed, d.Ref)
				return tx.SettingInsert(ctx, "rearmed-"+d.Ref, []byte("yes"))
			},
		}}, st, nil, nil, nil)
		id, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: "widget", Ref: "w1", Payload: []byte("{}"), Reason: "test"})
		require.NoError(t, err)
		require.ErrorContains(t, svc.Retry(ctx, id), "not now")
		_, err = st.DeadLetterGet(ctx, id)
		require.NoError(t, err, "a failed retry keeps the record")

		fail = false
		require.NoError(t, svc.Retry(ctx, id))
		require.Equal(t, []string{"w1"}, rearmed)
		_, err = st.DeadLetterGet(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound)
		v, err := st.SettingGet(ctx, "rearmed-w1")
		require.NoError(t, err)
		require.Equal(t, []byte("yes"), v)

		other, err := st.DeadLetterInsert(ctx, store.DeadLetter{Kind: "gadget", Ref: "g", Payload: []byte("{}"), Reason: "test"})
		require.NoError(t, err)
		require.ErrorIs(t, svc.Retry(ctx, other), ErrNotRetryable)
	})
}
