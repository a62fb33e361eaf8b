package anchor

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestLedgerKeyCreatedOnceAndKept(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		keys := make([]string, 6)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				k, err := LoadOrCreateLedgerKey(ctx, st)
				if err != nil {
					t.Errorf("load: %v", err)
				}
				keys[i] = k
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			require.Equal(t, keys[0], k, "instances starting together agree on one key")
		}
		_, err := sawtooth.NewSigner(keys[0])
		require.NoError(t, err)
	})
}

func TestLedgerAnchorIsPendingWithASignedBatch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		key, err := LoadOrCreateLedgerKey(ctx, st)
		require.NoError(t, err)
		signer, err := sawtooth.NewSigner(key)
		require.NoError(t, err)
		builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
		require.NoError(t, err)
		backend, err := NewLedger(builder, LedgerConfig{ServiceID: "circuit::service"})
		require.NoError(t, err)
		w, err := NewWriter(Config{}, backend)
		require.NoError(t, err)

		var a store.Anchor
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			a, err = w.Write(ctx, tx, Request{AnchorString: "1.QmLedger", CoreIndexCID: "QmLedger", OpCount: 1,
				Ops: []OpRef{{"EiA", "create"}}})
			return err
		}))
		require.Equal(t, "ledger", a.Backend)
		require.Equal(t, store.AnchorPending, a.Status)
		require.Nil(t, a.CompletedAt)
		var rec Record
		require.NoError(t, json.Unmarshal(a.Record, &rec))
		require.Equal(t, "secp256k1:"+signer.PublicKey(), rec.Signer)
		require.Equal(t, "1.QmLedger", rec.Anchor)
		require.Equal(t, rec.Time.Unix(), a.IssuedAt)

		// The anchor's batch waits for a submitter; its bytes are a valid, signed BatchList
		// carrying the anchor string.
		batches, err := st.LedgerBatchClaim(ctx, store.LedgerBatchClaimParams{Owner: "test", Limit: 10, TTL: time.Minute})
		require.NoError(t, err)
		require.Len(t, batches, 1)
		b := batches[0]
		require.Equal(t, a.Seq, b.AnchorSeq)
		require.Equal(t, "1.QmLedger", b.DataChangeID)
		require.Equal(t, "circuit::service", b.ServiceID)
		require.Equal(t, signer.PublicKey(), b.SignerPublicKey)
		list, err := sawtooth.ParseBatchList(b.SerializedBatch)
		require.NoError(t, err)
		require.Len(t, list.GetBatches(), 1)
		vb, err := sawtooth.VerifyBatch(list.GetBatches()[0])
		require.NoError(t, err)
		require.Equal(t, b.HeaderSignature, vb.ID)
		require.Len(t, vb.Transactions, 1)
		require.Equal(t, "1.QmLedger", string(vb.Transactions[0].Payload))
		txns, err := st.LedgerTransactionList(ctx, b.HeaderSignature)
		require.NoError(t, err)
		require.Len(t, txns, 1)
		require.Equal(t, vb.Transactions[0].ID, txns[0].HeaderSignature)
		require.Equal(t, sawtooth.FamilyName, txns[0].FamilyName)

		// A batch transaction that rolls back leaves neither the anchor nor its batch.
		boom := errors.New("boom")
		err = st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if _, err := w.Write(ctx, tx, Request{AnchorString: "1.QmGone", CoreIndexCID: "QmGone", OpCount: 1}); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		counts, err := st.LedgerBatchCount(ctx)
		require.NoError(t, err)
		require.Equal(t, store.LedgerBatchCounts{Unsubmitted: 1, Claimed: 1}, counts)
		list2, err := st.AnchorList(ctx, store.AnchorListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, list2, 1)
	})
}
