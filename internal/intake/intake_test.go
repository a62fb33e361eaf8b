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
)

// ledger is the anchored history intake validates against: what the observer would have indexed.
type ledger struct {
	mu  sync.Mutex
	ops map[string][]sidetree.AnchoredOperation
	seq uint64
}

func (l *ledger) anchor(t *testing.T, req []byte) {
	t.Helper()
	op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
	require.NoError(t, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.ops[op.Suffix] = append(l.ops[op.Suffix], sidetree.AnchoredOperation{Sequence: l.seq, Type: op.Type, Suffix: op.Suffix, Request: op.Request})
}

func (l *ledger) state(_ context.Context, suffix string) (*sidetree.State, uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ops[suffix]) == 0 {
		return nil, 0, nil
	}
	return sidetree.Resolve(sidetree.DefaultProfile(), suffix, l.ops[suffix]), uint64(len(l.ops[suffix])), nil
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
		b.ledger.anchor(t, u)
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

	// Once the first is anchored and indexed — here or, in a cluster, by another instance that
	// never tells this one — the DID's history has a new version and the second is judged on it.
	b.ledger.anchor(t, first)
	_, err = b.svc.Submit(ctx, second)
	require.NoError(t, err)
}

func TestReservationsLapse(t *testing.T) {
	t.Parallel()
	p := NewPending(time.Minute)
	now := time.Now()
	p.now = func() time.Time { return now }
	require.True(t, p.Reserve("a", 7))
	require.False(t, p.Reserve("a", 7), "same history: still pending")
	require.True(t, p.Reserve("a", 8), "history moved on: the pending operation landed")
	p.ReserveAll([]string{"b"})
	require.False(t, p.Reserve("b", 3), "queued before a restart: only Release or the TTL ends it")
	now = now.Add(time.Minute)
	require.True(t, p.Reserve("b", 3), "TTL passed")
	p.Release([]string{"a", "b"})
	require.Zero(t, p.Len())
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
	failing := func(context.Context, string) (*sidetree.State, uint64, error) { return nil, 0, errors.New("db down") }
	svc, err := New(Config{Profile: sidetree.DefaultProfile()}, b.queue, failing, b.pending)
	require.NoError(t, err)
	_, err = svc.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrRetryLater)
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
			b.ledger.anchor(t, create)
			b.pending.Release([]string{id.Suffix})
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
	svc, err := New(Config{Profile: sidetree.DefaultProfile(), CreateStateFunc: func(ctx context.Context, suffix string) (*sidetree.State, uint64, error) {
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
	b.ledger.anchor(t, create)
	b.pending.Release([]string{alice.Suffix})
	// A create of an anchored DID is refused through it as through the StateFunc.
	_, err = svc.Submit(ctx, create)
	require.Equal(t, sidetree.CodeDIDAlreadyExists, code(err))
	update, err := b.wallet.Update(alice)
	require.NoError(t, err)
	_, err = svc.Submit(ctx, update)
	require.NoError(t, err)
	require.Equal(t, []string{alice.Suffix, alice.Suffix}, creates, "the update read through the StateFunc")
}
