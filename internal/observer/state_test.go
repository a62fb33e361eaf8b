package observer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/store/storetest"
)

// build stores the batch files of reqs in CAS and returns them, for an anchor the caller records.
func (b *testBundle) build(t *testing.T, reqs ...[]byte) *batchfile.Files {
	t.Helper()
	var ops []*sidetree.Operation
	for _, r := range reqs {
		op, err := sidetree.ParseOperation(r, sidetree.DefaultProfile())
		require.NoError(t, err)
		ops = append(ops, op)
	}
	files, err := batchfile.Build(ops, b.cas.Address, batchfile.Limits{})
	require.NoError(t, err)
	for _, f := range files.List() {
		require.NoError(t, b.cas.PutAddressed(context.Background(), f.URI, f.Data))
	}
	return files
}

// requireStatesAreResolution checks every DID of suffixes: its stored state is the record of
// its indexed operations, and resolvers render what resolving those operations renders.
func requireStatesAreResolution(t *testing.T, st store.Store, resolvers []*Resolver, suffixes []string) {
	t.Helper()
	ctx := context.Background()
	p := sidetree.DefaultProfile()
	for _, s := range suffixes {
		rows, err := historyOf(ctx, st, s)
		require.NoError(t, err)
		stored, err := st.DIDStateGet(ctx, s)
		if len(rows) == 0 {
			require.ErrorIs(t, err, store.ErrNotFound, "no operations, no state")
			continue
		}
		require.NoError(t, err, "a DID with operations has a state")
		rec, err := sidetree.DecodeStateRecord(s, stored)
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolveRecord(p, s, anchoredOps(rows)), rec, "state of %s", s)

		did, err := sidetree.ParseDID(p, sidetree.ShortFormDID(p, s))
		require.NoError(t, err)
		want, wantStatus := sidetree.RenderResolution(did, sidetree.Resolve(p, s, anchoredOps(rows)))
		for _, r := range resolvers {
			for range 2 { // the second from the cache
				state, err := r.State(ctx, s)
				require.NoError(t, err)
				require.Equal(t, rec.State, state, "cached state of %s", s)
			}
			body, status, err := r.Resolve(ctx, did.ShortForm())
			require.NoError(t, err)
			require.Equal(t, wantStatus, status)
			require.Equal(t, string(want), string(body), "resolution of %s", s)
		}
	}
}

// TestIndexedStatesAreResolution indexes random operations of a few DIDs through every path the
// index is written by (the batch writer's handoff, the batch files, sliced or not, another
// domain's anchors, and ledger anchors that complete after later ones were indexed) and checks
// after each anchor that every DID's stored state is what resolving its operations gives, and
// resolves as that does.
func TestIndexedStatesAreResolution(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		known := NewKnown()
		embedded := newTestResolver(sidetree.DefaultProfile(), st, known, 0)
		o, err := New(Config{Profile: sidetree.DefaultProfile(), Known: known, Resolver: embedded, IndexTxRows: 2, Logger: anchordtest.Logger(t)}, st, b.cas.FetchFunc)
		require.NoError(t, err)
		resolvers := []*Resolver{embedded, newTestResolver(sidetree.DefaultProfile(), st, nil, 0)}

		type did struct {
			id      *wallet.Identity
			create  []byte
			created bool
		}
		var dids []*did
		var suffixes []string
		for range 6 {
			id, create, err := b.wallet.Create(wallet.AddServices(wallet.Service{ID: "s", Type: "T", Endpoint: "https://s.example"}))
			require.NoError(t, err)
			dids = append(dids, &did{id: id, create: create})
			suffixes = append(suffixes, id.Suffix)
		}
		request := func(d *did) []byte {
			if !d.created {
				d.created = true
				return d.create
			}
			patch := wallet.AddServices(wallet.Service{ID: fmt.Sprintf("s%d", rng.IntN(3)), Type: "T", Endpoint: "https://u.example"})
			var req []byte
			var err error
			switch n := rng.IntN(20); {
			case n < 2: // a fork: opens the commitment the next real update opens
				fork := *d.id
				req, err = b.wallet.Update(&fork, patch)
			case n < 4:
				req, err = b.wallet.Recover(d.id, patch)
			case n < 5:
				req, err = b.wallet.Deactivate(d.id)
			default:
				req, err = b.wallet.Update(d.id, patch)
			}
			require.NoError(t, err)
			return req
		}
		var pending []int64
		for step := range 25 {
			var reqs [][]byte
			for _, i := range rng.Perm(len(dids))[:1+rng.IntN(len(dids))] {
				reqs = append(reqs, request(dids[i]))
			}
			switch rng.IntN(5) {
			case 0: // a ledger anchor, completed later
				files := b.build(t, reqs...)
				a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: len(reqs), Backend: "ledger", Status: store.AnchorPending})
				require.NoError(t, err)
				pending = append(pending, a.Seq)
			case 1: // another domain's
				_, err := o.ObserveForeign(ctx, b.foreign(t, fmt.Sprintf("hl:%d", step), reqs...), nil)
				require.NoError(t, err)
			case 2: // handed over by the batch writer
				files := b.build(t, reqs...)
				a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: len(reqs), Backend: "local", Status: store.AnchorCompleted})
				require.NoError(t, err)
				o.Handoff(a.Seq, files.Operations)
			default: // read back from CAS
				b.anchorOps(t, reqs...)
			}
			if len(pending) > 0 && rng.IntN(3) == 0 {
				i := rng.IntN(len(pending))
				_, err := st.AnchorCompletePending(ctx, pending[i])
				require.NoError(t, err)
				pending = append(pending[:i], pending[i+1:]...)
			}
			_, err := o.CatchUp(ctx)
			require.NoError(t, err)
			requireStatesAreResolution(t, st, resolvers, suffixes)
		}
		for _, seq := range pending {
			_, err := st.AnchorCompletePending(ctx, seq)
			require.NoError(t, err)
		}
		_, err = o.CatchUp(ctx)
		require.NoError(t, err)
		requireStatesAreResolution(t, st, resolvers, suffixes)
	})
}

// TestFillStatesComputesWhatWasIndexedBefore: on an index whose states were never computed (a
// database from before did_states), FillStates computes every DID's, goes on where a fill that
// was cut short stopped, and then has nothing left to do.
func TestFillStatesComputesWhatWasIndexedBefore(t *testing.T) {
	t.Parallel()
	for _, backend := range storetest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			sc := storetest.OpenScratch(t, backend)
			st := sc.Store
			b := setup(t, st)
			ctx := context.Background()
			o := b.observer(t)
			var suffixes []string
			var reqs [][]byte
			for range 2*fillPage + 10 {
				id, create, err := b.wallet.Create()
				require.NoError(t, err)
				suffixes = append(suffixes, id.Suffix)
				reqs = append(reqs, create)
				if len(suffixes) == 3 {
					update, err := b.wallet.Update(id)
					require.NoError(t, err)
					b.anchorOps(t, update) // anchored before its create: only its history gives its state
				}
			}
			b.anchorOps(t, reqs...)
			_, err := o.CatchUp(ctx)
			require.NoError(t, err)
			want, err := st.DIDStateGetMany(ctx, suffixes)
			require.NoError(t, err)
			require.Len(t, want, len(suffixes))

			// Such a database's rows name their DID, which a new one's leave to the state.
			setSuffix := `UPDATE did_operations SET suffix = ? WHERE anchor_seq = ? AND op_index = ?`
			if backend == "postgres" {
				setSuffix = `UPDATE did_operations SET suffix = $1 WHERE anchor_seq = $2 AND op_index = $3`
			}
			for _, suffix := range suffixes {
				ops, err := st.DIDOperationList(ctx, suffix)
				require.NoError(t, err)
				for _, op := range ops {
					_, err = sc.Exec(ctx, setSuffix, suffix, op.AnchorSeq, op.Index)
					require.NoError(t, err)
				}
			}
			// As before did_states: no state, and the migration's request for a fill.
			_, err = sc.Exec(ctx, `DELETE FROM did_states`)
			require.NoError(t, err)
			require.NoError(t, st.SettingPut(ctx, store.DIDStateFillSetting, nil))
			// Such a database also had the index by suffix, and the store, opened again,
			// reads through it.
			switch backend {
			case "sqlite":
				_, err = sc.Exec(ctx, `CREATE INDEX did_operations_suffix ON did_operations (suffix)`)
				require.NoError(t, err)
				again, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: filepath.Dir(st.(*sqlitestore.Store).Path())})
				require.NoError(t, err)
				t.Cleanup(again.Close)
				st = again
			case "postgres":
				_, err = sc.Exec(ctx, `ALTER TABLE did_operations DROP CONSTRAINT did_operations_pkey,
					ADD PRIMARY KEY (suffix, anchor_seq, op_index)`)
				require.NoError(t, err)
				again, err := pgstore.Open(ctx, pgstore.Config{URL: sc.URL})
				require.NoError(t, err)
				t.Cleanup(again.Close)
				st = again
			}

			// A fill stopped after its first page.
			cut, cancel := context.WithCancel(ctx)
			n, err := FillStates(cut, &cuttingStore{Store: st, cancel: cancel}, sidetree.DefaultProfile(), o.batches, anchordtest.Logger(t))
			require.ErrorIs(t, err, context.Canceled)
			require.Equal(t, fillPage, n)
			v, err := st.SettingGet(ctx, store.DIDStateFillSetting)
			require.NoError(t, err)
			require.Contains(t, string(v), fillAfter, "its progress committed with its page")

			n, err = FillStates(ctx, st, sidetree.DefaultProfile(), o.batches, anchordtest.Logger(t))
			require.NoError(t, err)
			require.Equal(t, len(suffixes)-fillPage, n, "the rest, each once")
			got, err := st.DIDStateGetMany(ctx, suffixes)
			require.NoError(t, err)
			require.Equal(t, want, got, "the states the observer computes")
			requireStatesAreResolution(t, st, []*Resolver{newTestResolver(sidetree.DefaultProfile(), st, nil, 0)}, suffixes[:5])

			n, err = FillStates(ctx, st, sidetree.DefaultProfile(), o.batches, anchordtest.Logger(t))
			require.NoError(t, err)
			require.Zero(t, n, "done")
		})
	}
}

// cuttingStore cancels its context once its first transaction committed.
type cuttingStore struct {
	store.Store
	cancel context.CancelFunc
}

func (c *cuttingStore) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	err := c.Store.InTx(ctx, fn)
	c.cancel()
	return err
}

// holdingStore holds its transactions at one point until release is closed, and closes held
// when the first gets there: before it writes the DIDs' states (holdBeforePut: their rows are
// locked), after it wrote them (holdAfterPut), or after it inserted the fresh ones
// (holdAfterInsert). With no point it never holds. puts counts the states its transactions put
// (DIDStatePutMany), committed or not.
type holdingStore struct {
	store.Store
	point   string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	puts    atomic.Int64
}

const (
	holdBeforePut   = "before the states are written"
	holdAfterPut    = "after the states are written"
	holdAfterInsert = "after the fresh states are inserted"
)

func (h *holdingStore) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	return h.Store.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		return fn(ctx, holdingTx{Executor: tx, h: h})
	})
}

func (h *holdingStore) hold() {
	h.once.Do(func() { close(h.held) })
	<-h.release
}

type holdingTx struct {
	store.Executor
	h *holdingStore
}

func (t holdingTx) DIDStatePutMany(ctx context.Context, states []store.DIDState) error {
	t.h.puts.Add(int64(len(states)))
	if t.h.point == holdBeforePut {
		t.h.hold()
	}
	err := t.Executor.DIDStatePutMany(ctx, states)
	if err == nil && t.h.point == holdAfterPut {
		t.h.hold()
	}
	return err
}

func (t holdingTx) DIDStateInsertMany(ctx context.Context, states []store.DIDState) (map[string]bool, error) {
	inserted, err := t.Executor.DIDStateInsertMany(ctx, states)
	if err == nil && t.h.point == holdAfterInsert {
		t.h.hold()
	}
	return inserted, err
}

// TestObserversOfOneDIDTakeTurns (PostgreSQL, where observers of several instances index at
// once): while one observer's transaction has written a DID's state and not committed, another
// that indexes an operation of the same DID waits for it, and then computes from what it
// committed; whichever anchor comes first, the state is what resolving both gives.
func TestObserversOfOneDIDTakeTurns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ order, point string }{
		{"in anchor order", holdBeforePut}, {"the later anchor first", holdBeforePut},
		{"in anchor order", holdAfterPut}, {"the later anchor first", holdAfterPut},
	} {
		order := c.order
		t.Run(c.order+", held "+c.point, func(t *testing.T) {
			t.Parallel()
			sc := storetest.OpenScratch(t, "postgres")
			st := sc.Store
			b := setup(t, st)
			ctx := context.Background()
			id, create, err := b.wallet.Create()
			require.NoError(t, err)
			b.anchorOps(t, create)
			_, err = b.observer(t).CatchUp(ctx)
			require.NoError(t, err)
			u1, err := b.wallet.Update(id, wallet.AddServices(wallet.Service{ID: "one", Type: "T", Endpoint: "https://one.example"}))
			require.NoError(t, err)
			u2, err := b.wallet.Update(id, wallet.AddServices(wallet.Service{ID: "two", Type: "T", Endpoint: "https://two.example"}))
			require.NoError(t, err)
			first, second := b.anchorOps(t, u1), b.anchorOps(t, u2)
			if order != "in anchor order" {
				first, second = second, first
			}

			h := &holdingStore{Store: st, point: c.point, held: make(chan struct{}), release: make(chan struct{})}
			holding, err := New(Config{Profile: sidetree.DefaultProfile(), Logger: anchordtest.Logger(t)}, h, b.cas.FetchFunc)
			require.NoError(t, err)
			firstDone := make(chan error, 1)
			go func() {
				_, err := holding.ObserveSeq(ctx, first.Seq)
				firstDone <- err
			}()
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(h.release) }) }
			t.Cleanup(release) // a failed test must not leave the transaction waiting
			anchordtest.WaitOrTimeout(t, h.held, 10*time.Second)

			other := b.observer(t)
			secondDone := make(chan error, 1)
			go func() {
				_, err := other.ObserveSeq(ctx, second.Seq)
				secondDone <- err
			}()
			// The second waits for the first's transaction, which holds the DID's state.
			require.Eventually(t, func() bool {
				n, err := sc.Exec(ctx, `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%did_states%'`)
				return err == nil && n > 0
			}, 10*time.Second, 10*time.Millisecond)
			select {
			case err := <-secondDone:
				t.Fatalf("the second observer did not wait for the first: %v", err)
			default:
			}
			release()
			require.NoError(t, anchordtest.WaitOrTimeout(t, firstDone, 10*time.Second))
			require.NoError(t, anchordtest.WaitOrTimeout(t, secondDone, 10*time.Second))

			requireStatesAreResolution(t, st, []*Resolver{newTestResolver(sidetree.DefaultProfile(), st, nil, 0)}, []string{id.Suffix})
			state, err := newTestResolver(sidetree.DefaultProfile(), st, nil, 0).State(ctx, id.Suffix)
			require.NoError(t, err)
			require.Equal(t, id.UpdateKey.Commitment(), state.UpdateCommitment, "both updates applied")
			require.Len(t, state.Document.Services, 2)
		})
	}
}

// TestSweepAndHandlerPutNoStateTwice (PostgreSQL, a cluster's instance): the sweep and the anchor
// topic's handler both find one anchor unobserved, one of them indexes it, and the other, however
// far the first got, writes nothing: no state is put a second time (the same state put back,
// a dead row per DID), and the index is what the first wrote.
func TestSweepAndHandlerPutNoStateTwice(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"handler", "sweep"} {
		t.Run("the "+first+" first", func(t *testing.T) {
			t.Parallel()
			sc := storetest.OpenScratch(t, "postgres")
			st := sc.Store
			b := setup(t, st)
			ctx := context.Background()
			var reqs [][]byte
			var suffixes []string
			for range 20 {
				id, create, err := b.wallet.Create()
				require.NoError(t, err)
				reqs = append(reqs, create)
				suffixes = append(suffixes, id.Suffix)
			}
			a := b.anchorOps(t, reqs...)
			observe := func(o *Observer, how string) (Result, error) {
				if how == "handler" {
					return o.ObserveSeq(ctx, a.Seq)
				}
				return o.runOnce(ctx)
			}
			second := "sweep"
			if first == "sweep" {
				second = "handler"
			}

			h := &holdingStore{Store: st, point: holdAfterInsert, held: make(chan struct{}), release: make(chan struct{})}
			holding, err := New(Config{Profile: sidetree.DefaultProfile(), Logger: anchordtest.Logger(t)}, h, b.cas.FetchFunc)
			require.NoError(t, err)
			type outcome struct {
				res Result
				err error
			}
			firstDone := make(chan outcome, 1)
			go func() {
				res, err := observe(holding, first)
				firstDone <- outcome{res, err}
			}()
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(h.release) }) }
			t.Cleanup(release)
			anchordtest.WaitOrTimeout(t, h.held, 10*time.Second)

			c := &holdingStore{Store: st}
			other, err := New(Config{Profile: sidetree.DefaultProfile(), Logger: anchordtest.Logger(t)}, c, b.cas.FetchFunc)
			require.NoError(t, err)
			secondDone := make(chan outcome, 1)
			go func() {
				res, err := observe(other, second)
				secondDone <- outcome{res, err}
			}()
			// The second either finds nothing to do, or waits for the first's transaction.
			var got outcome
			waited := false
			require.Eventually(t, func() bool {
				select {
				case got = <-secondDone:
					return true
				default:
				}
				n, err := sc.Exec(ctx, `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'
					AND (query LIKE '%anchors%' OR query LIKE '%did_operations%' OR query LIKE '%did_states%')`)
				waited = err == nil && n > 0
				return waited
			}, 10*time.Second, 10*time.Millisecond)
			release()
			firstGot := anchordtest.WaitOrTimeout(t, firstDone, 10*time.Second)
			require.NoError(t, firstGot.err)
			require.Equal(t, len(reqs), firstGot.res.Operations, "the first indexed the anchor")
			if waited {
				got = anchordtest.WaitOrTimeout(t, secondDone, 10*time.Second)
			}
			require.NoError(t, got.err)
			require.Zero(t, got.res.Operations, "the second indexed nothing")
			t.Logf("the %s second (waited for the first: %v): states put by the first %d, by the second %d", second, waited, h.puts.Load(), c.puts.Load())
			require.Zero(t, h.puts.Load()+c.puts.Load(), "creates only: every state inserted, none put")

			observed, err := st.AnchorGet(ctx, a.Seq)
			require.NoError(t, err)
			require.NotNil(t, observed.ObservedAt)
			requireStatesAreResolution(t, st, []*Resolver{newTestResolver(sidetree.DefaultProfile(), st, nil, 0)}, suffixes)
		})
	}
}

// TestSlicesAreReleasedAsTheyCommit: an anchor indexed in slices releases each slice's
// operations as soon as the slice commits, when readers already see their states: a client that
// resolves the new state and sends the DID's next operation is not told it is still pending.
func TestSlicesAreReleasedAsTheyCommit(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	var reqs [][]byte
	for range 5 {
		_, create, err := b.wallet.Create()
		require.NoError(t, err)
		reqs = append(reqs, create)
	}
	a := b.anchorOps(t, reqs...)
	var releases [][]string
	o, err := New(Config{Profile: sidetree.DefaultProfile(), IndexTxRows: 2, ReleaseFunc: func(ops []store.DIDOperation) {
		var suffixes []string
		for _, op := range ops {
			_, err := st.DIDStateGet(ctx, op.Suffix)
			require.NoError(t, err, "released once its state is committed")
			suffixes = append(suffixes, op.Suffix)
		}
		observed, err := st.AnchorGet(ctx, a.Seq)
		require.NoError(t, err)
		if len(releases) < 2 {
			require.Nil(t, observed.ObservedAt, "released before the anchor's last slice")
		}
		releases = append(releases, suffixes)
	}, Logger: anchordtest.Logger(t)}, st, b.cas.FetchFunc)
	require.NoError(t, err)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	require.Len(t, releases, 3, "slices of 2, 2 and 1")
	require.Len(t, releases[2], 1)
}
