package anchor

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestDomainKeyCreatedOnceAndKept(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		keys := make([]ed25519.PrivateKey, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() {
				k, err := LoadOrCreateDomainKey(ctx, st)
				if err != nil {
					t.Errorf("load: %v", err)
				}
				keys[i] = k
			})
		}
		wg.Wait()
		for _, k := range keys[1:] {
			require.True(t, keys[0].Equal(k), "instances starting together agree on one key")
		}
		again, err := LoadOrCreateDomainKey(ctx, st)
		require.NoError(t, err)
		require.True(t, keys[0].Equal(again))
	})
}

func TestLocalAnchorIsSignedAndComplete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		key, err := LoadOrCreateDomainKey(ctx, st)
		require.NoError(t, err)
		fixed := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		w, err := NewWriter(Config{NowFunc: func() time.Time { return fixed }}, NewLocal(key))
		require.NoError(t, err)

		// A first batch creates two DIDs; its operations are indexed as the observer would.
		var first store.Anchor
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			first, err = w.Write(ctx, tx, Request{AnchorString: "2.QmA", CoreIndexCID: "QmA", OpCount: 2,
				Ops: []OpRef{{"EiX", "create"}, {"EiY", "create"}}})
			return err
		}))
		require.Equal(t, store.AnchorCompleted, first.Status)
		require.NotNil(t, first.CompletedAt)
		require.Equal(t, "local", first.Backend)
		require.NoError(t, VerifyLocal(first))
		require.NoError(t, new(storetest.Indexer).Index(ctx, st, []store.DIDOperation{
			{Suffix: "EiX", AnchorSeq: first.Seq, Index: 0, Type: "create", Request: []byte("{}")},
			{Suffix: "EiY", AnchorSeq: first.Seq, Index: 1, Type: "create", Request: []byte("{}")},
		}))

		// A second batch updates one of them and creates another: only the update has a previous anchor.
		var second store.Anchor
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			second, err = w.Write(ctx, tx, Request{AnchorString: "2.QmB", CoreIndexCID: "QmB", OpCount: 2,
				Ops: []OpRef{{"EiZ", "create"}, {"EiX", "update"}}})
			return err
		}))
		require.NoError(t, VerifyLocal(second))
		var rec Record
		require.NoError(t, json.Unmarshal(second.Record, &rec))
		require.Equal(t, map[string]string{"EiX": "2.QmA"}, rec.Previous)
		require.Equal(t, "2.QmB", rec.Anchor)
		require.Equal(t, "QmB", rec.CoreIndex)
		require.Equal(t, fixed, rec.Time)
		require.Equal(t, SignerID(key.Public().(ed25519.PublicKey)), rec.Signer)

		// Tampering with the stored record or the row is detected.
		bad := second
		bad.Record = append([]byte(nil), second.Record...)
		bad.Record[len(bad.Record)-3] ^= 1
		require.Error(t, VerifyLocal(bad))
		bad = second
		bad.AnchorString = "3.QmB"
		require.Error(t, VerifyLocal(bad))
	})
}
