package observer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

const originA = "https://a.example/services/anchord"

// foreign builds a ForeignAnchor of the given requests, in batch order, with its batch files
// stored in CAS as the relay stores another domain's.
func (b *testBundle) foreign(t *testing.T, hashlink string, reqs ...[]byte) ForeignAnchor {
	t.Helper()
	files := b.build(t, reqs...)
	ops := make([]sidetree.AnchoredOperation, len(files.Operations))
	for i, op := range files.Operations {
		// As the batch reader returns them: without the builder's parse.
		ops[i] = sidetree.AnchoredOperation{Position: op.Position, Type: op.Type, Suffix: op.Suffix, Request: op.Request}
	}
	return ForeignAnchor{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, Origin: originA, Hashlink: hashlink, Operations: ops}
}

func TestObserveForeignIndexesWhatItKeeps(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		// Embedded mode: the filter and the trusted cache must see foreign writes too.
		known := NewKnown()
		r := newTestResolver(sidetree.DefaultProfile(), st, known, 0)
		o, err := New(Config{Profile: sidetree.DefaultProfile(), Known: known, Resolver: r, Logger: anchordtest.Logger(t)}, st, b.cas.FetchFunc)
		require.NoError(t, err)
		o.signal.Init(t)

		alice, createA, err := b.wallet.Create()
		require.NoError(t, err)
		bob, createB, err := b.wallet.Create()
		require.NoError(t, err)
		// Resolved (and cached) as absent before the anchor arrives.
		stA, err := r.State(ctx, alice.Suffix)
		require.NoError(t, err)
		require.Nil(t, stA)

		var seenSeq int64
		res, err := o.ObserveForeign(ctx, b.foreign(t, "hl:one", createA, createB), func(ctx context.Context, tx store.Executor, seq int64, ops []sidetree.AnchoredOperation) ([]sidetree.AnchoredOperation, error) {
			seenSeq = seq
			require.NoError(t, tx.SettingInsert(ctx, "written-with-the-anchor", []byte("yes")))
			return ops[:1], nil // bob's create is refused
		})
		require.NoError(t, err)
		require.Equal(t, seenSeq, res.Seq)
		require.Equal(t, 1, res.Operations)

		a, err := st.AnchorGet(ctx, res.Seq)
		require.NoError(t, err)
		require.Equal(t, originA, a.Origin)
		require.Equal(t, "hl:one", a.Hashlink)
		require.Equal(t, store.AnchorBackendFederation, a.Backend)
		require.Equal(t, 2, a.OpCount)
		require.NotNil(t, a.ObservedAt)
		_, err = st.SettingGet(ctx, "written-with-the-anchor")
		require.NoError(t, err)

		require.True(t, known.MayContain(alice.Suffix))
		stA, err = r.State(ctx, alice.Suffix)
		require.NoError(t, err)
		require.NotNil(t, stA, "the cached absence was forgotten")
		require.True(t, stA.Published)
		require.Equal(t, originA, stA.Origin(), "resolution names the origin domain")
		stB, err := r.State(ctx, bob.Suffix)
		require.NoError(t, err)
		require.Nil(t, stB, "refused operations are not indexed")

		// The local observer never reads it; a second delivery changes nothing.
		again, err := o.runOnce(ctx)
		require.NoError(t, err)
		require.Zero(t, again.Seq)
		_, err = o.ObserveForeign(ctx, b.foreign(t, "hl:one", createA, createB), nil)
		require.ErrorIs(t, err, store.ErrConflict)
		rows, err := historyOf(ctx, st, alice.Suffix)
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, originA, rows[0].Origin)
	})
}

func TestObserveForeignRollsBackOnError(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	o := b.observer(t)
	id, create, err := b.wallet.Create()
	require.NoError(t, err)
	boom := errors.New("boom")
	_, err = o.ObserveForeign(ctx, b.foreign(t, "hl:two", create), func(context.Context, store.Executor, int64, []sidetree.AnchoredOperation) ([]sidetree.AnchoredOperation, error) {
		return nil, boom
	})
	require.ErrorIs(t, err, boom)
	got, err := st.AnchorsByHashlink(ctx, []string{"hl:two"})
	require.NoError(t, err)
	require.Empty(t, got, "no anchor without its operations")
	rows, err := historyOf(ctx, st, id.Suffix)
	require.NoError(t, err)
	require.Empty(t, rows)

	// Without a function every operation is indexed.
	res, err := o.ObserveForeign(ctx, b.foreign(t, "hl:two", create), nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.Operations)
}

func TestIndexedFuncHearsOfEveryAnchor(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	var heard []Result
	o, err := New(Config{Profile: sidetree.DefaultProfile(), IndexedFunc: func(r Result) { heard = append(heard, r) }, Logger: anchordtest.Logger(t)}, st, b.cas.FetchFunc)
	require.NoError(t, err)
	id, local, err := b.wallet.Create()
	require.NoError(t, err)
	a := b.anchorOps(t, local)
	_, err = o.CatchUp(ctx)
	require.NoError(t, err)
	_, remote, err := b.wallet.Create()
	require.NoError(t, err)
	res, err := o.ObserveForeign(ctx, b.foreign(t, "hl:heard", remote), nil)
	require.NoError(t, err)
	require.Len(t, heard, 2)
	require.Equal(t, a.Seq, heard[0].Seq)
	require.Equal(t, []string{id.Suffix}, heard[0].Suffixes, "our anchor's DIDs, for its publication")
	require.Nil(t, heard[1].Suffixes)
	require.Equal(t, res, heard[1])
	// A failed indexing is not heard of.
	_, err = o.ObserveForeign(ctx, b.foreign(t, "hl:heard", remote), nil)
	require.Error(t, err)
	require.Len(t, heard, 2)
}

// TestForeignUpdateInItsCreatesSecondDoesNotApply: under the did:orb profile an update that
// another domain anchored in the same whole second as its DID's create does not apply, as Orb
// ignores it, and one anchored a second later does. The stored state (extended by the update)
// and a state computed again from the index rows (which carry each anchor's second) agree.
func TestForeignUpdateInItsCreatesSecondDoesNotApply(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		p := sidetree.OrbProfile("https:a.example")
		b.wallet = wallet.New(wallet.Config{AnchorOrigin: originA})
		r := newTestResolver(p, st, nil, 0)
		o, err := New(Config{Profile: p, Resolver: r, Logger: anchordtest.Logger(t)}, st, b.cas.FetchFunc)
		require.NoError(t, err)
		home := wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"})
		more := wallet.AddServices(wallet.Service{ID: "more", Type: "LinkedDomains", Endpoint: "https://example.org"})
		same, createSame, err := b.wallet.Create(home)
		require.NoError(t, err)
		later, createLater, err := b.wallet.Create(home)
		require.NoError(t, err)
		updateSame, err := b.wallet.Update(same, more)
		require.NoError(t, err)
		updateLater, err := b.wallet.Update(later, more)
		require.NoError(t, err)

		const t0 = int64(1_800_000_000)
		for _, a := range []struct {
			hashlink string
			issued   int64
			reqs     [][]byte
		}{
			{"hl:creates", t0, [][]byte{createSame, createLater}},
			{"hl:same-second", t0, [][]byte{updateSame}},
			{"hl:next-second", t0 + 1, [][]byte{updateLater}},
		} {
			fa := b.foreign(t, a.hashlink, a.reqs...)
			fa.IssuedAt = a.issued
			_, err := o.ObserveForeign(ctx, fa, nil)
			require.NoError(t, err)
		}

		for _, tc := range []struct {
			suffix   string
			services []string
			updated  time.Time
		}{
			{same.Suffix, []string{"home"}, time.Time{}},
			{later.Suffix, []string{"home", "more"}, time.Unix(t0+1, 0).UTC()},
		} {
			stored, err := r.State(ctx, tc.suffix)
			require.NoError(t, err)
			require.NotNil(t, stored)
			require.Equal(t, tc.services, serviceIDs(stored))
			require.Equal(t, t0, stored.CanonicalTime)
			// The metadata's times are the credentials' seconds, as Orb's are, not when the
			// anchors arrived here.
			meta, err := r.orbAnchors().metadata(ctx, stored)
			require.NoError(t, err)
			require.Equal(t, time.Unix(t0, 0).UTC(), meta.Created)
			require.Equal(t, tc.updated, meta.Updated)

			rows, err := historyOf(ctx, st, tc.suffix)
			require.NoError(t, err)
			require.Len(t, rows, 2)
			replayed := sidetree.ResolveRecord(p, tc.suffix, anchoredOps(rows))
			require.Equal(t, tc.services, serviceIDs(replayed.State), "computed again from the rows")
		}
	})
}

func serviceIDs(st *sidetree.State) []string {
	var ids []string
	for _, s := range st.Document.Services {
		ids = append(ids, s.ID)
	}
	return ids
}
