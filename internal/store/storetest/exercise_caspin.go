package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseCASPins(t *testing.T, setup setupFunc) {
	t.Run("CASPinsQueueClaimSettle", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		claim := func(owner string, limit int) []string {
			pins, err := s.CASPinClaim(ctx, store.CASPinClaimParams{Owner: owner, Limit: limit, TTL: time.Hour})
			require.NoError(t, err)
			var cids []string
			for _, p := range pins {
				cids = append(cids, p.CID)
			}
			return cids
		}
		require.NoError(t, s.CASPinQueue(ctx, []string{"c1", "c2", "c3"}, false))
		require.NoError(t, s.CASPinQueue(ctx, []string{"c1"}, false), "queueing again is a no-op")
		n, err := s.CASPinPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, n)

		a := claim("a", 2)
		require.Len(t, a, 2)
		b := claim("b", 5)
		require.Len(t, b, 1, "claimed pins are not claimed twice")
		require.Empty(t, claim("c", 5))

		require.ErrorIs(t, s.CASPinDone(ctx, a[0], "b"), store.ErrLeaseLost, "only the owner settles")
		require.NoError(t, s.CASPinDone(ctx, a[0], "a"))
		require.NoError(t, s.CASPinFail(ctx, store.CASPinFailParams{CID: a[1], Owner: "a", Retry: time.Hour, History: []string{"node down"}}))
		require.Empty(t, claim("c", 5), "a failed pin waits for its retry time")
		require.NoError(t, s.CASPinPark(ctx, b[0], "b"))
		n, err = s.CASPinPending(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n, "the failed and the parked pin are not done")

		// Requeueing makes done, failed and parked pins due again (a wiped node, a retry).
		require.NoError(t, s.CASPinQueue(ctx, []string{a[0], a[1], b[0]}, true))
		again, err := s.CASPinClaim(ctx, store.CASPinClaimParams{Owner: "d", Limit: 5, TTL: time.Hour})
		require.NoError(t, err)
		require.Len(t, again, 3)
		for _, p := range again {
			if p.CID == a[1] {
				require.Equal(t, 1, p.Attempts)
				require.Equal(t, []string{"node down"}, p.History)
			}
		}
	})

	t.Run("CASPinExpiredClaimIsTakenOver", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		require.NoError(t, s.CASPinQueue(ctx, []string{"x"}, false))
		pins, err := s.CASPinClaim(ctx, store.CASPinClaimParams{Owner: "slow", Limit: 1, TTL: time.Microsecond})
		require.NoError(t, err)
		require.Len(t, pins, 1)
		time.Sleep(2 * time.Millisecond) // the database clock must pass the claim; nothing to signal
		pins, err = s.CASPinClaim(ctx, store.CASPinClaimParams{Owner: "fast", Limit: 1, TTL: time.Hour})
		require.NoError(t, err)
		require.Len(t, pins, 1)
		require.ErrorIs(t, s.CASPinDone(ctx, "x", "slow"), store.ErrLeaseLost, "the late owner is fenced")
		require.NoError(t, s.CASPinDone(ctx, "x", "fast"))
	})

	t.Run("CASListPagesInCIDOrder", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		for i := range 7 {
			require.NoError(t, s.CASPut(ctx, fmt.Sprintf("cid-%d", i), []byte{byte(i)}))
		}
		var all []string
		after := ""
		for {
			page, err := s.CASList(ctx, after, 3)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			all = append(all, page...)
			after = page[len(page)-1]
		}
		require.Equal(t, []string{"cid-0", "cid-1", "cid-2", "cid-3", "cid-4", "cid-5", "cid-6"}, all)
	})
}
