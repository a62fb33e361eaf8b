package cas

import (
	"bytes"
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		for _, v := range []CIDVersion{CIDv0, CIDv1} {
			reg := prometheus.NewRegistry()
			s, err := NewStore(StoreConfig{Version: v, Registerer: reg}, st)
			require.NoError(t, err)
			small := []byte("hello world\n")
			big := bytes.Repeat([]byte("0123456789abcdef"), 40_000) // 640 KB: a multi-block DAG

			for _, data := range [][]byte{small, big} {
				cid, err := s.Put(ctx, data)
				require.NoError(t, err)
				require.Equal(t, ComputeCID(data, v), cid)
				again, err := s.Put(ctx, data)
				require.NoError(t, err, "idempotent")
				require.Equal(t, cid, again)
				got, err := s.Get(ctx, cid, 0)
				require.NoError(t, err)
				require.Equal(t, data, got)
				_, err = s.Get(ctx, cid, len(data)-1)
				require.ErrorIs(t, err, ErrTooLarge)
				got, err = s.Get(ctx, cid, len(data))
				require.NoError(t, err, "the cap is inclusive")
				require.Len(t, got, len(data))
			}
			if v == CIDv0 {
				require.Equal(t, "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o", s.Address(small), "what ipfs add prints")
			}
			require.Equal(t, float64(2*(len(small)+len(big))), testutil.ToFloat64(s.m.written))
		}

		s, err := NewStore(StoreConfig{}, st)
		require.NoError(t, err)
		_, err = s.Get(ctx, "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH", 0)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = s.Get(ctx, "not-a-cid", 0)
		require.ErrorIs(t, err, ErrInvalidCID)

		// Bytes changed at rest are reported, never served.
		cid := s.Address([]byte("original"))
		require.NoError(t, st.CASPut(ctx, cid, []byte("tampered")))
		_, err = s.Get(ctx, cid, 0)
		require.ErrorIs(t, err, ErrCorrupt)

		// By hash, the names did:orb batch files and Orb's /cas use: a bare resource hash, a
		// hashlink, a hashlink with links (which the local lookup ignores).
		content := []byte("a batch file")
		_, err = s.Put(ctx, content)
		require.NoError(t, err)
		hl := activity.NewHashlink(content, "https://elsewhere.example/cas/QmWhatever")
		parsed, err := activity.ParseHashlink(hl)
		require.NoError(t, err)
		for _, key := range []string{parsed.ResourceHash(), parsed.Anchor(), hl} {
			got, err := s.Get(ctx, key, 0)
			require.NoError(t, err, key)
			require.Equal(t, content, got, key)
			_, err = s.Get(ctx, key, len(content)-1)
			require.ErrorIs(t, err, ErrTooLarge, key)
		}
		_, err = s.Get(ctx, activity.NewHashlink([]byte("never stored")), 0)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = s.Get(ctx, "hl:uEiBnotahash", 0)
		require.ErrorIs(t, err, ErrInvalidCID)

		fetch := s.FetchFunc(ctx)
		data, err := fetch(s.Address(bytes.Repeat([]byte("0123456789abcdef"), 40_000)), 1_000_000)
		require.NoError(t, err)
		require.Len(t, data, 640_000)
	})
}
