package anchor

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestRequeueGivesEveryOperationBack(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		cs, err := cas.NewStore(cas.StoreConfig{}, st)
		require.NoError(t, err)
		w := wallet.New(wallet.Config{})
		profile := sidetree.DefaultProfile()

		// A batch with a create, an update and a deactivate, stored and anchored (pending).
		alice, _, err := w.Create()
		require.NoError(t, err)
		bob, _, err := w.Create()
		require.NoError(t, err)
		update, err := w.Update(bob)
		require.NoError(t, err)
		deact, err := w.Deactivate(alice)
		require.NoError(t, err)
		carol, createC, err := w.Create()
		require.NoError(t, err)
		var ops []*sidetree.Operation
		for _, r := range [][]byte{createC, update, deact} {
			op, err := sidetree.ParseOperation(r, profile)
			require.NoError(t, err)
			ops = append(ops, op)
		}
		files, err := batchfile.Build(ops, cs.Address, batchfile.Limits{})
		require.NoError(t, err)
		for _, f := range files.List() {
			require.NoError(t, cs.PutAddressed(ctx, f.URI, f.Data))
		}
		a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: files.Anchor.String(), CoreIndexCID: files.CoreIndex.URI, OpCount: 3, Backend: "ledger", Status: store.AnchorPending})
		require.NoError(t, err)
		var ids []string
		for _, op := range ops {
			sum := sha256.Sum256(op.Request)
			ids = append(ids, base64.RawURLEncoding.EncodeToString(sum[:]))
		}
		require.NoError(t, st.AnchoredOpsInsert(ctx, a.Seq, ids, time.Hour))

		requeue := RequeueFunc(RequeueConfig{Profile: profile, FetchFunc: cs.FetchFunc, GiveBackTxFunc: opqueue.Rows{InstanceID: "local", Lifespan: time.Hour}.GiveBackTx})
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error { return requeue(ctx, tx, a) }))

		rows, err := st.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "local", Limit: 10})
		require.NoError(t, err)
		require.Len(t, rows, 3)
		got := map[string]string{}
		for _, r := range rows {
			got[r.Suffix] = r.Type
			require.Contains(t, ids, r.OpID, "the same operation ids: the queue knows them again")
			require.Contains(t, r.History[0], "failed")
		}
		require.Equal(t, map[string]string{carol.Suffix: "create", bob.Suffix: "update", alice.Suffix: "deactivate"}, got)
		anchored, err := st.AnchoredOpsFilter(ctx, ids)
		require.NoError(t, err)
		require.Empty(t, anchored, "no longer taken for duplicates")
		for _, r := range rows {
			_, err := sidetree.ParseOperation(r.Request, profile)
			require.NoError(t, err, "a requeued request is a valid request")
		}
	})
}
