package intake

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// ledger is the anchored history intake validates against: what the observer would have indexed.
type ledger struct {
	mu  sync.Mutex
	ops map[string][]sidetree.AnchoredOperation
	seq uint64
}

// anchor adds req to the history and returns it as the observer's index row.
func (l *ledger) anchor(t *testing.T, req []byte) store.DIDOperation {
	t.Helper()
	op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
	require.NoError(t, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.ops[op.Suffix] = append(l.ops[op.Suffix], sidetree.AnchoredOperation{Sequence: l.seq, Type: op.Type, Suffix: op.Suffix, Request: op.Request})
	return store.DIDOperation{Suffix: op.Suffix, AnchorSeq: int64(l.seq), Type: string(op.Type), Request: op.Request}
}

func (l *ledger) state(_ context.Context, suffix string) (*sidetree.State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ops[suffix]) == 0 {
		return nil, nil
	}
	return sidetree.Resolve(sidetree.DefaultProfile(), suffix, l.ops[suffix]), nil
}

// queue records what intake queues.
type queue struct {
	mu    sync.Mutex
	added []opqueue.NewOp
	err   error
}

func (q *queue) Add(_ context.Context, op opqueue.NewOp) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.added = append(q.added, op)
	return nil
}

type testBundle struct {
	svc     *Service
	ledger  *ledger
	queue   *queue
	pending *Pending
	wallet  *wallet.Wallet
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	b := &testBundle{ledger: &ledger{ops: map[string][]sidetree.AnchoredOperation{}}, queue: &queue{}, pending: NewPending(0), wallet: wallet.New(wallet.Config{})}
	svc, err := New(Config{Profile: sidetree.DefaultProfile()}, b.queue, b.ledger.state, b.pending)
	require.NoError(t, err)
	b.svc = svc
	return b
}

// index anchors req and then ends its reservation, as the observer does once the index rows
// are committed.
func (b *testBundle) index(t *testing.T, req []byte) {
	t.Helper()
	b.pending.ReleaseIndexed([]store.DIDOperation{b.ledger.anchor(t, req)})
}

func code(err error) sidetree.Code { return sidetree.CodeOf(err) }

func TestCreateQueuedAndAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id, req, err := b.wallet.Create()
	require.NoError(t, err)
	resp, err := b.svc.Submit(context.Background(), req)
	require.NoError(t, err)
	require.Contains(t, string(resp), `"published":false`)
	require.Contains(t, string(resp), id.Suffix)
	require.Len(t, b.queue.added, 1)
	require.Equal(t, id.Suffix, b.queue.added[0].Suffix)
	require.NotNil(t, b.queue.added[0].Parsed, "the batch writer gets the parse")
	require.Equal(t, 1, b.pending.Len())
}

func TestRejections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice, createA, err := b.wallet.Create()
	require.NoError(t, err)
	b.ledger.anchor(t, createA)
	carol, createC, err := b.wallet.Create()
	require.NoError(t, err)
	b.ledger.anchor(t, createC)
	deact, err := b.wallet.Deactivate(carol)
	require.NoError(t, err)
	b.ledger.anchor(t, deact)

	stranger, _, err := b.wallet.Create() // never anchored
	require.NoError(t, err)
	updateUnknown, err := b.wallet.Update(stranger)
	require.NoError(t, err)

	// An update signed with a key the DID does not commit to.
	wrongKey := *alice
	wrongKey.UpdateKey, err = b.wallet.NewKey()
	require.NoError(t, err)
	updateWrongKey, err := b.wallet.Update(&wrongKey)
	require.NoError(t, err)

	updateDeactivated, err := b.wallet.Update(carol)
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		body []byte
		want sidetree.Code
	}{
		{"not json", []byte("{"), sidetree.CodeInvalidJSON},
		{"unknown type", []byte(`{"type":"delete"}`), sidetree.CodeUnknownOperationType},
		{"create of an existing DID", createA, sidetree.CodeDIDAlreadyExists},
		{"update of an unknown DID", updateUnknown, sidetree.CodeDIDNotFound},
		{"update with a key not committed to", updateWrongKey, sidetree.CodeCommitmentMismatch},
		{"update of a deactivated DID", updateDeactivated, sidetree.CodeDIDDeactivated},
	} {
		_, err := b.svc.Submit(ctx, tc.body)
		require.Equal(t, tc.want, code(err), "%s: %v", tc.name, err)
	}
	require.Empty(t, b.queue.added)
	require.Zero(t, b.pending.Len(), "rejections release their reservation")
}

func TestDIDGrowthLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	profile := sidetree.DefaultProfile()
	profile.MaxOperationsPerDID = 3
	profile.MaxDocumentBytes = 1024
	svc, err := New(Config{Profile: profile}, b.queue, b.ledger.state, b.pending)
	require.NoError(t, err)
	ctx := context.Background()
	service := func(id string, n int) wallet.Patch {
		return wallet.AddServices(wallet.Service{ID: id, Type: "LinkedDomains", Endpoint: "https://example.org/" + strings.Repeat("x", n)})
	}

	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.ledger.anchor(t, create)

	// A delta within MaxDeltaSize whose service would take the document past 1 KiB.
	saved := *alice
	big, err := b.wallet.Update(alice, service("big", 700))
	require.NoError(t, err)
	_, err = svc.Submit(ctx, big)
	require.Equal(t, sidetree.CodeDocumentTooLarge, code(err), "%v", err)
	require.Contains(t, err.Error(), "more than the limit of 1024")
	*alice = saved

	for i := range 2 { // operations 2 and 3 of 3
		u, err := b.wallet.Update(alice, service("s"+strconv.Itoa(i), 10))
		require.NoError(t, err)
		_, err = svc.Submit(ctx, u)
		require.NoError(t, err)
		b.index(t, u)
	}
	u, err := b.wallet.Update(alice, service("s9", 10))
	require.NoError(t, err)
	_, err = svc.Submit(ctx, u)
	require.Equal(t, sidetree.CodeTooManyOperations, code(err), "%v", err)
	saved = *alice
	rec, err := b.wallet.Recover(alice)
	require.NoError(t, err)
	_, err = svc.Submit(ctx, rec)
	require.Equal(t, sidetree.CodeTooManyOperations, code(err), "a recover grows the history too")
	*alice = saved

	deact, err := b.wallet.Deactivate(alice)
	require.NoError(t, err)
	_, err = svc.Submit(ctx, deact)
	require.NoError(t, err, "a DID at its limit can still be deactivated")
}

func TestSecondOperationWhilePendingIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.ledger.anchor(t, create)
	first, err := b.wallet.Update(alice)
	require.NoError(t, err)
	second, err := b.wallet.Update(alice)
	require.NoError(t, err)

	_, err = b.svc.Submit(ctx, first)
	require.NoError(t, err)
	_, err = b.svc.Submit(ctx, second)
	require.Equal(t, CodeOperationPending, code(err))

	// Anchored is not enough: until its index rows are committed the first still holds the DID.
	row := b.ledger.anchor(t, first)
	_, err = b.svc.Submit(ctx, second)
	require.Equal(t, CodeOperationPending, code(err))

	// Once the observer has indexed it, the second is judged on the state that holds it.
	b.pending.ReleaseIndexed([]store.DIDOperation{row})
	_, err = b.svc.Submit(ctx, second)
	require.NoError(t, err)
}

func TestReservationsEndOnlyByTheirOwnOperation(t *testing.T) {
	t.Parallel()
	p := NewPending(time.Minute)
	now := time.Now()
	p.now = func() time.Time { return now }
	require.True(t, p.Reserve("a", "op-1"))
	require.False(t, p.Reserve("a", "op-2"), "another operation of the DID waits")
	require.False(t, p.Reserve("a", "op-1"), "the same request sent twice is queued once")
	p.Release([]store.DIDPendingKey{{Suffix: "a", OpID: "op-2"}})
	require.False(t, p.Reserve("a", "op-2"), "a release of another operation leaves the holder alone")
	p.Release([]store.DIDPendingKey{{Suffix: "a", OpID: "op-1"}})
	require.True(t, p.Reserve("a", "op-2"), "released by its own operation")

	p.ReserveAll([]store.DIDPendingKey{{Suffix: "b", OpID: "op-3"}})
	require.False(t, p.Reserve("b", "op-4"), "queued before a restart: only its release or the TTL ends it")
	now = now.Add(time.Minute)
	require.True(t, p.Reserve("b", "op-4"), "TTL passed")
	p.Release([]store.DIDPendingKey{{Suffix: "b", OpID: "op-3"}})
	require.False(t, p.Reserve("b", "op-5"), "the lapsed holder's late release does not free the DID")
	p.Release([]store.DIDPendingKey{{Suffix: "a", OpID: "op-2"}, {Suffix: "b", OpID: "op-4"}})
	require.Zero(t, p.Len())
}

// TestHoldWaitsForTheHolderBeingIndexed: between the observer's commit and its release a
// resolution already shows the holder's operation; a Hold for the DID's next operation then
// waits for the outcome instead of being refused. A failed commit leaves the holder, and the
// Hold is refused; a Hold whose context ends stops waiting.
func TestHoldWaitsForTheHolderBeingIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := NewPending(time.Minute)
	req := []byte(`{"type":"update"}`)
	row := store.DIDOperation{Suffix: "a", Request: req}
	require.True(t, p.Reserve("a", opqueue.OpIDOf(req)))

	done := p.Committing([]store.DIDOperation{row, {Suffix: "unreserved", Request: req}})
	held := make(chan bool, 1)
	next := []byte(`{"type":"recover"}`)
	go func() {
		ok, err := p.Hold(ctx, "a", false, opqueue.OpIDOf(next))
		require.NoError(t, err)
		held <- ok
	}()
	select {
	case ok := <-held:
		t.Fatalf("Hold answered %v while the holder was being indexed", ok)
	case <-time.After(50 * time.Millisecond):
	}
	p.ReleaseIndexed([]store.DIDOperation{row}) // the commit succeeded
	done()
	require.True(t, <-held, "the next operation takes the DID once its holder is indexed")

	// The commit fails: the holder keeps the DID.
	done = p.Committing([]store.DIDOperation{{Suffix: "a", Request: next}})
	go func() {
		ok, err := p.Hold(ctx, "a", false, "op-third")
		require.NoError(t, err)
		held <- ok
	}()
	done()
	require.False(t, <-held, "refused: the holder was not indexed")

	// A context that ends stops the wait.
	other := []byte(`{"type":"create"}`)
	require.True(t, p.Reserve("b", opqueue.OpIDOf(other)))
	done = p.Committing([]store.DIDOperation{{Suffix: "b", Request: other}})
	defer done()
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	ok, err := p.Hold(short, "b", false, "op-b2")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestConcurrentSubmitsForOneDIDAcceptOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, req, err := b.wallet.Create()
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, pending := 0, 0
	for range 20 {
		wg.Go(func() {
			_, err := b.svc.Submit(context.Background(), req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case code(err) == CodeOperationPending:
				pending++
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, ok)
	require.Equal(t, 19, pending)
}

func TestQueueFailureIsRetryLater(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue.err = opqueue.ErrPushback
	_, req, err := b.wallet.Create()
	require.NoError(t, err)
	_, err = b.svc.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrRetryLater)
	require.ErrorIs(t, err, opqueue.ErrPushback)
	require.Zero(t, b.pending.Len())

	b.queue.err = nil
	failing := func(context.Context, string) (*sidetree.State, error) { return nil, errors.New("db down") }
	svc, err := New(Config{Profile: sidetree.DefaultProfile()}, b.queue, failing, b.pending)
	require.NoError(t, err)
	_, err = svc.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrRetryLater)
	require.Zero(t, b.pending.Len(), "a failed state read gives the reservation back")
}

func TestAnchorOrigins(t *testing.T) {
	t.Parallel()
	const ours, theirs = "https://a.example/services/anchord", "https://b.example/services/anchord"
	for _, tc := range []struct {
		name    string
		allowed []string
		origin  string
		ok      bool
	}{
		{"undeclared, nothing allowed", nil, "", true},
		{"declared, nothing allowed", nil, ours, false},
		{"ours", []string{ours}, ours, true},
		{"another domain's", []string{ours}, theirs, false},
		{"prefix is not enough", []string{"https://a.example"}, ours, false},
		{"wildcard", []string{AllowAllOrigins}, theirs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			svc, err := New(Config{Profile: sidetree.DefaultProfile(), AllowedOrigins: tc.allowed}, b.queue, b.ledger.state, b.pending)
			require.NoError(t, err)
			w := wallet.New(wallet.Config{AnchorOrigin: tc.origin})
			id, create, err := w.Create()
			require.NoError(t, err)
			_, err = svc.Submit(t.Context(), create)
			if !tc.ok {
				require.Equal(t, CodeOriginNotAllowed, code(err))
				require.Empty(t, b.queue.added)
				// The DID was never reserved: a create without the origin goes through.
				_, err = svc.Submit(t.Context(), mustCreateWithout(t))
				require.NoError(t, err)
				return
			}
			require.NoError(t, err)
			require.Len(t, b.queue.added, 1)
			// A recover declaring the same origin is checked the same way.
			b.index(t, create)
			recover, err := w.Recover(id)
			require.NoError(t, err)
			_, err = svc.Submit(t.Context(), recover)
			require.NoError(t, err)
		})
	}
}

func mustCreateWithout(t *testing.T) []byte {
	t.Helper()
	_, req, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	return req
}

func TestCreateStateFuncAnswersCreatesOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	var creates []string
	var mu sync.Mutex
	svc, err := New(Config{Profile: sidetree.DefaultProfile(), CreateStateFunc: func(ctx context.Context, suffix string) (*sidetree.State, error) {
		mu.Lock()
		creates = append(creates, suffix)
		mu.Unlock()
		return b.ledger.state(ctx, suffix)
	}}, b.queue, b.ledger.state, b.pending)
	require.NoError(t, err)

	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	_, err = svc.Submit(ctx, create)
	require.NoError(t, err)
	b.index(t, create)
	// A create of an anchored DID is refused through it as through the StateFunc.
	_, err = svc.Submit(ctx, create)
	require.Equal(t, sidetree.CodeDIDAlreadyExists, code(err))
	update, err := b.wallet.Update(alice)
	require.NoError(t, err)
	_, err = svc.Submit(ctx, update)
	require.NoError(t, err)
	require.Equal(t, []string{alice.Suffix, alice.Suffix}, creates, "the update read through the StateFunc")
}

// TestStateIsReadUnderTheReservation holds open the window of a request whose state read began
// before the observer indexed the DID's pending operation and returned after it: the read's
// snapshot predates the index rows, while the reservation they ended is gone by the time the
// read returns. A request checked against that snapshot would be accepted although the
// operation it competes with is already in the history, and two updates revealing the same key
// would both be anchored. The DID must be reserved before its state is read, in memory
// (embedded) as in the database (a cluster, on each backend).
func TestStateIsReadUnderTheReservation(t *testing.T) {
	t.Parallel()
	// Each shape's reservations, and how its observer ends them once an operation is indexed.
	type shape struct {
		name    string
		pending func(t *testing.T) (Reservations, func(ctx context.Context, ops []store.DIDOperation) error)
	}
	shapes := []shape{{"memory", func(*testing.T) (Reservations, func(context.Context, []store.DIDOperation) error) {
		p := NewPending(0)
		return p, func(_ context.Context, ops []store.DIDOperation) error { p.ReleaseIndexed(ops); return nil }
	}}}
	for _, backend := range storetest.Backends {
		shapes = append(shapes, shape{"database/" + backend, func(t *testing.T) (Reservations, func(context.Context, []store.DIDOperation) error) {
			st := storetest.Open(t, storetest.OpenerFor(t, backend))
			p := NewSharedPending(st, 0, nil)
			return p, func(ctx context.Context, ops []store.DIDOperation) error {
				return st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return p.ReleaseTx(ctx, tx, ops) })
			}
		}})
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			pending, release := sh.pending(t)
			l := &ledger{ops: map[string][]sidetree.AnchoredOperation{}}
			q := &queue{}
			w := wallet.New(wallet.Config{})
			alice, create, err := w.Create()
			require.NoError(t, err)
			l.anchor(t, create)
			// Two updates that reveal the same update key: only one can ever apply.
			first, second := *alice, *alice
			firstReq, err := w.Update(&first)
			require.NoError(t, err)
			secondReq, err := w.Update(&second)
			require.NoError(t, err)

			// during, when set, runs once inside the next state read, after its snapshot.
			var during func()
			state := func(ctx context.Context, suffix string) (*sidetree.State, error) {
				snapshot, err := l.state(ctx, suffix)
				if f := during; f != nil {
					during = nil
					f()
				}
				return snapshot, err
			}
			svc, err := New(Config{Profile: sidetree.DefaultProfile()}, q, state, pending)
			require.NoError(t, err)

			_, err = svc.Submit(ctx, firstReq)
			require.NoError(t, err)
			indexFirst := func() {
				require.NoError(t, release(ctx, []store.DIDOperation{l.anchor(t, firstReq)}))
			}
			during = indexFirst
			_, err = svc.Submit(ctx, secondReq)
			require.Equal(t, CodeOperationPending, code(err), "the second update was checked against the state before the first: %v", err)
			require.Len(t, q.added, 1)

			if during != nil { // the second never read the state: the first is indexed now
				during = nil
				indexFirst()
			}
			_, err = svc.Submit(ctx, secondReq)
			require.Equal(t, sidetree.CodeCommitmentMismatch, code(err), "judged on the state that holds the first: %v", err)
			next, err := w.Update(&first)
			require.NoError(t, err)
			_, err = svc.Submit(ctx, next)
			require.NoError(t, err, "the DID takes the update after the first")
			require.Len(t, q.added, 2)
		})
	}
}

// TestAcceptedFuncHearsOfQueuedOperations: the unpublished operation store is told of each
// operation once it is queued, with its DID's declared anchor origin, and of nothing refused.
func TestAcceptedFuncHearsOfQueuedOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type heard struct {
		typ    sidetree.OperationType
		opID   string
		origin string
	}
	var got []heard
	svc, err := New(Config{Profile: sidetree.DefaultProfile(), AllowedOrigins: []string{AllowAllOrigins},
		AcceptedFunc: func(op *sidetree.Operation, opID, origin string) { got = append(got, heard{op.Type, opID, origin}) },
	}, b.queue, b.ledger.state, b.pending)
	require.NoError(t, err)
	w := wallet.New(wallet.Config{AnchorOrigin: "https://a.example"})
	id, create, err := w.Create()
	require.NoError(t, err)
	_, err = svc.Submit(t.Context(), create)
	require.NoError(t, err)
	_, err = svc.Submit(t.Context(), create)
	require.Equal(t, CodeOperationPending, code(err))
	b.index(t, create)
	update, err := w.Update(id)
	require.NoError(t, err)
	_, err = svc.Submit(t.Context(), update)
	require.NoError(t, err)
	require.Equal(t, []heard{
		{sidetree.OperationCreate, b.queue.added[0].OpID, ""},
		{sidetree.OperationUpdate, b.queue.added[1].OpID, "https://a.example"},
	}, got)
}
