package observer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/mempubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

type testBundle struct {
	st       store.Store
	cas      *cas.Store
	anchors  *anchor.Writer
	wallet   *wallet.Wallet
	released chan []store.DIDOperation
	// steps are the hooks' calls in order: "committing <n>", "released <n>", "done".
	steps   chan string
	failCAS atomic.Bool
}

func setup(t *testing.T, st store.Store) *testBundle {
	t.Helper()
	cs, err := cas.NewStore(cas.StoreConfig{}, st)
	require.NoError(t, err)
	key, err := anchor.LoadOrCreateDomainKey(context.Background(), st)
	require.NoError(t, err)
	aw, err := anchor.NewWriter(anchor.Config{NowFunc: secondApart()}, anchor.NewLocal(key))
	require.NoError(t, err)
	return &testBundle{st: st, cas: cs, anchors: aw, wallet: wallet.New(wallet.Config{}), released: make(chan []store.DIDOperation, 100), steps: make(chan string, 300)}
}

// secondApart is a clock of anchor times: the time now, or the whole second after the last time
// it gave if that is later. The anchors are a second apart as the did:orb profile keeps them
// (anchor.Config.WholeSeconds) without waiting for the clock, so that an update is never in its
// create's second, where Orb's rule, which resolution follows under that profile, ignores it.
func secondApart() func() time.Time {
	var mu sync.Mutex
	var last time.Time
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at := time.Now()
		if next := last.Truncate(time.Second).Add(time.Second); !last.IsZero() && at.Before(next) {
			at = next
		}
		last = at
		return at
	}
}

func (b *testBundle) observer(t *testing.T) *Observer {
	t.Helper()
	fetch := func(ctx context.Context) func(string, int) ([]byte, error) {
		real := b.cas.FetchFunc(ctx)
		return func(uri string, max int) ([]byte, error) {
			if b.failCAS.Load() {
				return nil, errors.New("cas unreachable")
			}
			return real(uri, max)
		}
	}
	step := func(s string) {
		select {
		case b.steps <- s:
		default: // only the first anchors' steps are looked at
		}
	}
	o, err := New(Config{
		Profile: sidetree.DefaultProfile(),
		ReleaseFunc: func(ops []store.DIDOperation) {
			step(fmt.Sprintf("released %d", len(ops)))
			b.released <- ops
		},
		CommittingFunc: func(ops []store.DIDOperation) func() {
			step(fmt.Sprintf("committing %d", len(ops)))
			return func() { step("done") }
		},
		Logger: anchordtest.Logger(t),
	}, b.st, fetch)
	require.NoError(t, err)
	o.signal.Init(t)
	return o
}

// anchorOps builds, stores and anchors a batch of requests (as the batch writer does) and
// returns the anchor.
func (b *testBundle) anchorOps(t *testing.T, reqs ...[]byte) store.Anchor {
	t.Helper()
	ctx := context.Background()
	var ops []*sidetree.Operation
	var refs []anchor.OpRef
	for _, r := range reqs {
		op, err := sidetree.ParseOperation(r, sidetree.DefaultProfile())
		require.NoError(t, err)
		ops = append(ops, op)
		refs = append(refs, anchor.OpRef{Suffix: op.Suffix, Type: string(op.Type)})
	}
	files, err := batchfile.Build(ops, b.cas.Address, batchfile.Limits{})
	require.NoError(t, err)
	for _, f := range files.List() {
		require.NoError(t, b.cas.PutAddressed(ctx, f.URI, f.Data))
	}
	var a store.Anchor
	require.NoError(t, b.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		var err error
		a, err = b.anchors.Write(ctx, tx, anchor.Request{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: len(ops), Ops: refs})
		return err
	}))
	return a
}

func TestObserveIndexesAnchorsAndResolves(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		o := b.observer(t)
		r := newTestResolver(sidetree.DefaultProfile(), st, nil, 0)

		alice, createA, err := b.wallet.Create()
		require.NoError(t, err)
		bob, createB, err := b.wallet.Create()
		require.NoError(t, err)
		a1 := b.anchorOps(t, createA, createB)

		// Before observation nobody can see them.
		body, status, err := r.Resolve(ctx, alice.DID())
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolutionNotFound, status)
		require.Nil(t, body)

		res, err := o.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, a1.Seq, res.Seq)
		require.Equal(t, 2, res.Operations)
		released := anchordtest.WaitOrTimeout(t, b.released, time.Second)
		var got, want []string
		for _, op := range released {
			got = append(got, op.Suffix+" "+string(op.Request))
		}
		for _, req := range [][]byte{createA, createB} {
			op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
			require.NoError(t, err)
			want = append(want, op.Suffix+" "+string(op.Request))
		}
		require.ElementsMatch(t, want, got, "released once indexed, with the requests that name the operations")
		require.ElementsMatch(t, []string{alice.Suffix, bob.Suffix}, []string{released[0].Suffix, released[1].Suffix})
		for _, want := range []string{"committing 2", "released 2", "done"} {
			require.Equal(t, want, anchordtest.WaitOrTimeout(t, b.steps, time.Second),
				"the reservations are marked before the index is written and unmarked after their release")
		}

		st1, err := r.State(ctx, alice.Suffix)
		require.NoError(t, err)
		require.NotNil(t, st1)
		require.True(t, st1.Published)
		require.Equal(t, alice.UpdateKey.Commitment(), st1.UpdateCommitment)

		// An update in a later anchor moves the state on.
		update, err := b.wallet.Update(alice)
		require.NoError(t, err)
		b.anchorOps(t, update)
		_, err = o.CatchUp(ctx)
		require.NoError(t, err)
		st2, err := r.State(ctx, alice.Suffix)
		require.NoError(t, err)
		require.Equal(t, alice.UpdateKey.Commitment(), st2.UpdateCommitment)

		// Deactivated: 410 with the deactivated document.
		deact, err := b.wallet.Deactivate(bob)
		require.NoError(t, err)
		b.anchorOps(t, deact)
		_, err = o.CatchUp(ctx)
		require.NoError(t, err)
		_, status, err = r.Resolve(ctx, bob.DID())
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolutionDeactivated, status)

		// Malformed DIDs are rejections, not failures.
		_, _, err = r.Resolve(ctx, "did:other:abc")
		require.Equal(t, sidetree.CodeInvalidDID, sidetree.CodeOf(err))

		// Nothing left: runOnce reports no anchor.
		res, err = o.runOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, res.Seq)
	})
}

func TestConcurrentObserversIndexEachAnchorOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		var want []string
		for range 6 {
			id, req, err := b.wallet.Create()
			require.NoError(t, err)
			want = append(want, id.Suffix)
			b.anchorOps(t, req)
		}
		observers := []*Observer{b.observer(t), b.observer(t), b.observer(t)}
		var wg sync.WaitGroup
		for _, o := range observers {
			wg.Go(func() {
				_, err := o.CatchUp(ctx)
				if err != nil {
					t.Errorf("catch up: %v", err)
				}
			})
		}
		wg.Wait()
		for _, s := range want {
			rows, err := historyOf(ctx, st, s)
			require.NoError(t, err)
			require.Len(t, rows, 1, "indexed exactly once")
		}
	})
}

func TestFetchFailureLeavesAnchorForLater(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	id, req, err := b.wallet.Create()
	require.NoError(t, err)
	a := b.anchorOps(t, req)
	o := b.observer(t)

	b.failCAS.Store(true)
	_, err = o.runOnce(ctx)
	require.ErrorContains(t, err, "cas unreachable")
	got, err := st.AnchorGet(ctx, a.Seq)
	require.NoError(t, err)
	require.Nil(t, got.ObservedAt, "not marked: it will be read again")

	b.failCAS.Store(false)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(runCtx) }()
	res := o.signal.WaitOrTimeout(t, 10*time.Second)
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, a.Seq, res.Seq)
	rows, err := historyOf(ctx, st, id.Suffix)
	require.NoError(t, err)
	require.Len(t, rows, 1)
}

// cutTx fails one InTx (the cut-th, counting from 1), as a crash or a lost disk between two of
// them would, and passes the others through.
type cutTx struct {
	store.Store
	cut, calls int
	// before, if set, runs before the call-th InTx (counting from 1) is passed through.
	before func(call int)
}

func (c *cutTx) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	c.calls++
	if c.calls == c.cut {
		return errors.New("cut between transactions")
	}
	if c.before != nil {
		c.before(c.calls)
	}
	return c.Store.InTx(ctx, fn)
}

// slicedObserver is an embedded observer (known filter, trusted resolver cache) indexing in slices
// of rows, on a SQLite store whose transactions cut can fail.
func slicedObserver(t *testing.T, rows int) (store.Store, *testBundle, *cutTx, *Resolver, *Observer) {
	t.Helper()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	known, err := LoadKnown(context.Background(), st)
	require.NoError(t, err)
	cut := &cutTx{Store: st}
	r := newTestResolver(sidetree.DefaultProfile(), st, known, 0)
	o, err := New(Config{Profile: sidetree.DefaultProfile(), IndexTxRows: rows, Known: known, Resolver: r, Logger: anchordtest.Logger(t)}, cut, b.cas.FetchFunc)
	require.NoError(t, err)
	return st, b, cut, r, o
}

// TestSlicedIndexIsCompletedOnceAfterACut: an anchor indexed in slices (Config.IndexTxRows) and
// cut after its first slice committed is indexed again from the start: every operation ends up
// indexed once, and the anchor marked observed only then. The resolver's trusted cache must not
// keep a state read between the slices.
func TestSlicedIndexIsCompletedOnceAfterACut(t *testing.T) {
	t.Parallel()
	st, b, cut, r, o := slicedObserver(t, 3)
	ctx := context.Background()

	// x exists already; the sliced anchor updates it in its last slice.
	x, createX, err := b.wallet.Create()
	require.NoError(t, err)
	b.anchorOps(t, createX)
	_, err = o.runOnce(ctx)
	require.NoError(t, err)
	var ids []*wallet.Identity
	var reqs [][]byte
	for range 6 {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		ids, reqs = append(ids, id), append(reqs, req)
	}
	update, err := b.wallet.Update(x)
	require.NoError(t, err)
	a := b.anchorOps(t, append(reqs, update)...)

	// Slices of 3, 3 and 1 (the last one marks the anchor); the second is cut.
	cut.cut = cut.calls + 2
	_, err = o.runOnce(ctx)
	require.ErrorContains(t, err, "cut between transactions")
	before, err := r.State(ctx, x.Suffix)
	require.NoError(t, err)
	require.NotEqual(t, x.UpdateKey.Commitment(), before.UpdateCommitment, "the update is not indexed yet")
	got, err := st.AnchorGet(ctx, a.Seq)
	require.NoError(t, err)
	require.Nil(t, got.ObservedAt)
	for i, id := range ids {
		rows, err := historyOf(ctx, st, id.Suffix)
		require.NoError(t, err)
		require.Len(t, rows, map[bool]int{true: 1, false: 0}[i < 3], "operation %d after the cut", i)
		// Cache what a reader would see now: the first slice resolves, the rest do not.
		state, err := r.State(ctx, id.Suffix)
		require.NoError(t, err)
		require.Equal(t, i < 3, state != nil, "operation %d after the cut", i)
	}

	res, err := o.runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, a.Seq, res.Seq)
	require.Equal(t, 7, res.Operations)
	for i, id := range ids {
		rows, err := historyOf(ctx, st, id.Suffix)
		require.NoError(t, err)
		require.Len(t, rows, 1, "operation %d", i)
		state, err := r.State(ctx, id.Suffix)
		require.NoError(t, err)
		require.NotNil(t, state, "operation %d", i)
		require.True(t, state.Published)
	}
	after, err := r.State(ctx, x.Suffix)
	require.NoError(t, err)
	require.Equal(t, x.UpdateKey.Commitment(), after.UpdateCommitment, "a state cached between the slices was kept")
	res, err = o.runOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Seq, "the anchor is observed")
}

// TestSliceCommitIsNotHiddenByTheCache: a reader that caches a DID's state just before the slice
// holding the DID's update commits must not have that state trusted once the slice is in the
// index, even when a later slice fails and the anchor's last transaction never runs.
func TestSliceCommitIsNotHiddenByTheCache(t *testing.T) {
	t.Parallel()
	st, b, cut, r, o := slicedObserver(t, 1)
	ctx := context.Background()

	var ids []*wallet.Identity
	var creates [][]byte
	for range 3 {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		ids, creates = append(ids, id), append(creates, req)
	}
	b.anchorOps(t, creates...)
	_, err := o.runOnce(ctx)
	require.NoError(t, err)
	_, other, err := b.wallet.Create()
	require.NoError(t, err)
	reqs := [][]byte{other}
	for _, id := range ids {
		u, err := b.wallet.Update(id)
		require.NoError(t, err)
		reqs = append(reqs, u)
	}
	b.anchorOps(t, reqs...)

	// Slices of one row: the create, two updates, then the last update with the mark. Just
	// before the second slice (the first update) commits, a reader caches every updated DID's
	// state; the third slice is cut.
	base := cut.calls
	cut.cut = base + 3
	cut.before = func(call int) {
		if call != base+2 {
			return
		}
		for _, id := range ids {
			_, err := r.State(ctx, id.Suffix)
			require.NoError(t, err)
		}
	}
	_, err = o.runOnce(ctx)
	require.ErrorContains(t, err, "cut between transactions")

	indexed := 0
	for _, id := range ids {
		rows, err := historyOf(ctx, st, id.Suffix)
		require.NoError(t, err)
		state, err := r.State(ctx, id.Suffix)
		require.NoError(t, err)
		if len(rows) == 2 {
			indexed++
			require.Equal(t, id.UpdateKey.Commitment(), state.UpdateCommitment, "an update in the index is hidden by a cached state")
		} else {
			require.NotEqual(t, id.UpdateKey.Commitment(), state.UpdateCommitment)
		}
	}
	require.Equal(t, 1, indexed, "one update's slice committed before the cut")
}

func TestInvalidBatchIsObservedEmpty(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	// An anchor whose core index file is not a batch file: every node ignores it.
	cid, err := b.cas.Put(ctx, []byte("not gzip"))
	require.NoError(t, err)
	a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: "1." + cid, CoreIndexCID: cid, OpCount: 1, Backend: "local", Status: store.AnchorCompleted})
	require.NoError(t, err)
	res, err := b.observer(t).runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, a.Seq, res.Seq)
	require.Zero(t, res.Operations)
	got, err := st.AnchorGet(ctx, a.Seq)
	require.NoError(t, err)
	require.NotNil(t, got.ObservedAt)
}

func TestResolveLongFormUnpublishedThenPublished(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	r := newTestResolver(sidetree.DefaultProfile(), st, nil, 0)
	_, req, err := b.wallet.Create()
	require.NoError(t, err)
	op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
	require.NoError(t, err)
	long, err := sidetree.LongFormDID(sidetree.DefaultProfile(), op)
	require.NoError(t, err)

	body, status, err := r.Resolve(ctx, long)
	require.NoError(t, err)
	require.Equal(t, sidetree.ResolutionFound, status)
	require.Contains(t, string(body), `"published":false`)

	b.anchorOps(t, req)
	_, err = b.observer(t).CatchUp(ctx)
	require.NoError(t, err)
	body, status, err = r.Resolve(ctx, long)
	require.NoError(t, err)
	require.Equal(t, sidetree.ResolutionFound, status)
	require.Contains(t, string(body), `"published":true`)
	require.Contains(t, string(body), `"canonicalId":"did:sidetree:`+op.Suffix+`"`)
}

func TestResolverCacheFollowsNewOperations(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	r := newTestResolver(sidetree.DefaultProfile(), st, nil, 0)
	r.max = 2
	o := b.observer(t)

	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.anchorOps(t, create)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	_, _, err = r.Resolve(ctx, alice.DID()) // renders, and keeps the rendering
	require.NoError(t, err)
	first, _, err := r.Resolve(ctx, alice.DID())
	require.NoError(t, err)
	again, _, err := r.Resolve(ctx, alice.DID())
	require.NoError(t, err)
	require.Same(t, &first[0], &again[0], "unchanged rows: the cached rendering")

	update, err := b.wallet.Update(alice)
	require.NoError(t, err)
	b.anchorOps(t, update)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	after, err := r.State(ctx, alice.Suffix)
	require.NoError(t, err)
	require.Equal(t, alice.UpdateKey.Commitment(), after.UpdateCommitment)
	body, _, err := r.Resolve(ctx, alice.DID())
	require.NoError(t, err)
	require.NotEqual(t, string(first), string(body), "changed rows: a new rendering")

	// The cache stays within its bound.
	for range 3 {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		b.anchorOps(t, req)
		_, err = o.CatchUp(ctx)
		require.NoError(t, err)
		_, err = r.State(ctx, id.Suffix)
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(r.cache), 2)
}

func TestAnchorTopicObservesEachAnchorOnce(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker := mempubsub.NewBroker(pubsub.Topics...)
	ps, err := mempubsub.New(mempubsub.Config{Broker: broker})
	require.NoError(t, err)
	defer ps.Close()
	o := b.observer(t)
	done := make(chan error, 1)
	go func() { done <- o.Subscribe(ctx, ps, 2) }()

	id, req, err := b.wallet.Create()
	require.NoError(t, err)
	a := b.anchorOps(t, req)
	// Announced twice (a redelivery): indexed once.
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, AnchorMessage(a.Seq), AnchorMessage(a.Seq)))
	res := o.signal.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, a.Seq, res.Seq)
	anchordtest.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool { return broker.Len(pubsub.TopicAnchor) == 0 })
	rows, err := historyOf(ctx, st, id.Suffix)
	require.NoError(t, err)
	require.Len(t, rows, 1)

	// A pending anchor is not observed when announced; an unknown one is ignored.
	res, err = o.ObserveSeq(ctx, a.Seq+100)
	require.NoError(t, err)
	require.Zero(t, res.Seq)
	cancel()
	require.NoError(t, <-done)
}

func TestKnownFilterSkipsReadsOnlyForNewDIDs(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.anchorOps(t, create)

	// A filter loaded at start knows what was indexed before; the observer teaches it the rest.
	known, err := LoadKnown(ctx, st)
	require.NoError(t, err)
	require.False(t, known.MayContain(alice.Suffix), "not indexed yet")
	o, err := New(Config{Profile: sidetree.DefaultProfile(), Known: known}, st, b.cas.FetchFunc)
	require.NoError(t, err)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	require.True(t, known.MayContain(alice.Suffix))
	r := newTestResolver(sidetree.DefaultProfile(), st, known, 0)
	state, err := r.State(ctx, alice.Suffix)
	require.NoError(t, err)
	require.NotNil(t, state)

	reloaded, err := LoadKnown(ctx, st)
	require.NoError(t, err)
	require.True(t, reloaded.MayContain(alice.Suffix))
	bob, _, err := b.wallet.Create()
	require.NoError(t, err)
	state, err = newTestResolver(sidetree.DefaultProfile(), st, reloaded, 0).State(ctx, bob.Suffix)
	require.NoError(t, err)
	require.Nil(t, state)
}

// TestUnfilledKnownReadsTheIndexUntilFilled: a filter started on an index it did not build says
// "may contain" for everything (callers read the database) until Fill has read the index; what the
// Observer indexes meanwhile is kept, and after the fill a DID never indexed is answered without a
// read.
func TestUnfilledKnownReadsTheIndexUntilFilled(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.anchorOps(t, create)
	_, err = newTestObserver(t, st, b, NewKnown()).CatchUp(ctx)
	require.NoError(t, err)

	known := NewUnfilledKnown()
	require.False(t, known.Filled())
	filled := known.Collector()
	require.Zero(t, testutil.ToFloat64(filled), "the gauge reads 0 until the fill ends")
	bob, create, err := b.wallet.Create()
	require.NoError(t, err)
	require.True(t, known.MayContain(bob.Suffix), "unfilled: everything may be indexed")
	index := &countingIndex{Executor: st}
	r := newTestResolver(sidetree.DefaultProfile(), index, known, 0)
	state, err := r.State(ctx, bob.Suffix)
	require.NoError(t, err)
	require.Nil(t, state)
	require.EqualValues(t, 1, index.reads.Load(), "unfilled, an unknown DID is read")

	// Bob is indexed before the fill runs, as the Observer does while a fill is under way.
	b.anchorOps(t, create)
	_, err = newTestObserver(t, st, b, known).CatchUp(ctx)
	require.NoError(t, err)
	require.NoError(t, known.Fill(ctx, st))
	require.True(t, known.Filled())
	require.Equal(t, 1.0, testutil.ToFloat64(filled))
	require.True(t, known.MayContain(alice.Suffix), "indexed before the start, read by the fill")
	require.True(t, known.MayContain(bob.Suffix), "indexed after the start, added by the Observer")
	carol, _, err := b.wallet.Create()
	require.NoError(t, err)
	reads := index.reads.Load()
	state, err = r.State(ctx, carol.Suffix)
	require.NoError(t, err)
	require.Nil(t, state)
	require.Equal(t, reads, index.reads.Load(), "filled, a DID never indexed is answered without a read")
}

// newTestObserver is an Observer with the default profile and known, failing t on error.
func newTestObserver(t *testing.T, st store.Store, b *testBundle, known *Known) *Observer {
	t.Helper()
	o, err := New(Config{Profile: sidetree.DefaultProfile(), Known: known}, st, b.cas.FetchFunc)
	require.NoError(t, err)
	return o
}

func TestKnownFilterGrowsWithoutLosingAnything(t *testing.T) {
	t.Parallel()
	k := NewKnown()
	var all []string
	for i := range 3 * knownInitialCapacity / 2 {
		all = append(all, fmt.Sprintf("EiSuffix%08d", i))
	}
	k.Add(all)
	require.Len(t, k.filters, 2, "a second, larger filter once the first is full")
	require.Equal(t, len(all), k.Len(), "the count spans both filters")
	for _, s := range all {
		if !k.MayContain(s) {
			t.Fatalf("%s added but reported absent", s)
		}
	}
	fp := 0
	for i := range 100_000 {
		if k.MayContain(fmt.Sprintf("EiOther%08d", i)) {
			fp++
		}
	}
	require.Less(t, fp, 1_500, "false positives stay near the configured rate (%d in 100,000)", fp)
}

// TestSliceRowsShrinkOnALargeIndex: the configured slice holds below largeIndexRows, the large
// index's from there on, and neither "one transaction" (0) nor a smaller configured slice grows.
func TestSliceRowsShrinkOnALargeIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ configured, indexRows, want int }{
		{IndexTxRowsOneWriter, 0, IndexTxRowsOneWriter},
		{IndexTxRowsOneWriter, largeIndexRows - 1, IndexTxRowsOneWriter},
		{IndexTxRowsOneWriter, largeIndexRows, IndexTxRowsLargeIndex},
		{IndexTxRowsOneWriter, 5 * largeIndexRows, IndexTxRowsLargeIndex},
		{0, 5 * largeIndexRows, 0},
		{3, 5 * largeIndexRows, 3},
	} {
		require.Equal(t, c.want, sliceRows(c.configured, c.indexRows), "configured %d, %d rows", c.configured, c.indexRows)
	}
}

// countingIndex counts reads of the per-DID index: of a DID's operations or of its state.
type countingIndex struct {
	store.Executor
	reads atomic.Int64
}

func (c *countingIndex) DIDOperationList(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	c.reads.Add(1)
	return c.Executor.DIDOperationList(ctx, suffix)
}

func (c *countingIndex) DIDStateGet(ctx context.Context, suffix string) ([]byte, error) {
	c.reads.Add(1)
	return c.Executor.DIDStateGet(ctx, suffix)
}

// trustedWithAlice returns an embedded observer of st, its resolver reading through index with
// its cache trusted, and one DID created and indexed.
func trustedWithAlice(t *testing.T, st store.Store, index store.Executor) (*testBundle, *Observer, *Resolver, *wallet.Identity) {
	t.Helper()
	b := setup(t, st)
	ctx := context.Background()
	known, err := LoadKnown(ctx, st)
	require.NoError(t, err)
	r := newTestResolver(sidetree.DefaultProfile(), index, known, 0)
	o, err := New(Config{Profile: sidetree.DefaultProfile(), Known: known, Resolver: r}, st, b.cas.FetchFunc)
	require.NoError(t, err)
	alice, create, err := b.wallet.Create()
	require.NoError(t, err)
	b.anchorOps(t, create)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	return b, o, r, alice
}

func TestTrustedCacheIsNeverStale(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	index := &countingIndex{Executor: st}
	b, o, r, alice := trustedWithAlice(t, st, index)
	ctx := context.Background()
	first, err := r.State(ctx, alice.Suffix)
	require.NoError(t, err)
	again, err := r.State(ctx, alice.Suffix)
	require.NoError(t, err)
	require.Equal(t, first, again)
	require.EqualValues(t, 1, index.reads.Load(), "the only writer announces every write: a cached state needs no read")

	// Readers hammer the DID while its updates are indexed: once an update's indexing returned,
	// no reader may see the state before it, however their reads interleaved with the commit.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := r.State(ctx, alice.Suffix)
				assert.NoError(t, err)
				_, _, err = r.Resolve(ctx, alice.DID())
				assert.NoError(t, err)
			}
		})
	}
	for range 20 {
		update, err := b.wallet.Update(alice)
		require.NoError(t, err)
		b.anchorOps(t, update)
		_, err = o.CatchUp(ctx)
		require.NoError(t, err)
		state, err := r.State(ctx, alice.Suffix)
		require.NoError(t, err)
		require.Equal(t, alice.UpdateKey.Commitment(), state.UpdateCommitment)
		// The rendering kept beside the cached state is what a resolver without a cache renders.
		body, _, err := r.Resolve(ctx, alice.DID())
		require.NoError(t, err)
		want, _, err := newTestResolver(sidetree.DefaultProfile(), st, nil, 0).Resolve(ctx, alice.DID())
		require.NoError(t, err)
		require.Equal(t, string(want), string(body))
	}
	close(stop)
	readers.Wait()
}

// undecodableStates is an index whose stored states are all unreadable, as one of a version
// this build does not know.
type undecodableStates struct{ countingIndex }

func (u *undecodableStates) DIDStateGet(ctx context.Context, suffix string) ([]byte, error) {
	if _, err := u.countingIndex.DIDStateGet(ctx, suffix); err != nil {
		return nil, err
	}
	return []byte{0xff}, nil
}

func TestTrustedCacheKeepsAStateComputedFromTheOperations(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	index := &undecodableStates{countingIndex{Executor: st}}
	_, _, r, alice := trustedWithAlice(t, st, index)
	ctx := context.Background()
	want, err := newTestResolver(sidetree.DefaultProfile(), st, nil, 0).State(ctx, alice.Suffix)
	require.NoError(t, err)
	for range 2 {
		state, err := r.State(ctx, alice.Suffix)
		require.NoError(t, err)
		require.Equal(t, want, state)
	}
	require.EqualValues(t, 2, index.reads.Load(), "the state and then the operations, once: the computed state is cached")
	body, _, err := r.Resolve(ctx, alice.DID())
	require.NoError(t, err)
	wantBody, _, err := newTestResolver(sidetree.DefaultProfile(), st, nil, 0).Resolve(ctx, alice.DID())
	require.NoError(t, err)
	require.Equal(t, string(wantBody), string(body))
}

// In a cluster the batch writer's operations wait for the announcement to come back to the
// instance's own observer, which then indexes them without reading the files back.
func TestClusterObserverIndexesItsOwnAnchorsFromTheWriter(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker := mempubsub.NewBroker(pubsub.Topics...)
	ps, err := mempubsub.New(mempubsub.Config{Broker: broker})
	require.NoError(t, err)
	defer ps.Close()
	o := b.observer(t)
	o.cfg.Announcer = ps
	done := make(chan error, 1)
	go func() { done <- o.Subscribe(ctx, ps, 2) }()

	id, req, err := b.wallet.Create()
	require.NoError(t, err)
	a := b.anchorOps(t, req)
	require.Equal(t, store.AnchorCompleted, a.Status)
	op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
	require.NoError(t, err)
	b.failCAS.Store(true) // the files are not read
	o.Anchored(a, []sidetree.AnchoredOperation{{Type: op.Type, Suffix: op.Suffix, Request: op.Request}})
	res := o.signal.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, a.Seq, res.Seq)
	rows, err := historyOf(ctx, st, id.Suffix)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	o.mu.Lock()
	require.Empty(t, o.handoff, "claimed")
	o.mu.Unlock()

	// Anchors another instance observed are never claimed here: only the latest are kept.
	for seq := range int64(10) {
		o.keep(a.Seq+100+seq, nil)
	}
	o.mu.Lock()
	require.Len(t, o.handoff, handoffMax)
	require.Contains(t, o.handoff, a.Seq+109)
	o.mu.Unlock()
	cancel()
	require.NoError(t, <-done)
}
