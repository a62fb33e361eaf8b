package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseCosignedCheckpoints(t *testing.T, setup setupFunc) {
	t.Run("CosignedCheckpointsSwapOnlyFromWhatWasRead", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const origin, hash = "b.example/log", "5e1a"
		row := func(size uint64, root string) store.CosignedCheckpoint {
			return store.CosignedCheckpoint{Origin: origin, OriginHash: hash, Size: size, Hash: []byte(root), Checkpoint: []byte(fmt.Sprintf("cp %d %s", size, root))}
		}

		_, err := s.CosignedCheckpointGet(ctx, origin)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.CosignedCheckpointGetByHash(ctx, hash)
		require.ErrorIs(t, err, store.ErrNotFound)

		first := row(5, "h5")
		ok, err := s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{New: first})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{New: row(5, "other")})
		require.NoError(t, err)
		require.False(t, ok, "a log has one first checkpoint")

		got, err := s.CosignedCheckpointGet(ctx, origin)
		require.NoError(t, err)
		require.Equal(t, uint64(5), got.Size)
		require.Equal(t, []byte("h5"), got.Hash)
		require.Equal(t, []byte("cp 5 h5"), got.Checkpoint)
		require.Equal(t, hash, got.OriginHash)
		require.False(t, got.UpdatedAt.IsZero())
		byHash, err := s.CosignedCheckpointGetByHash(ctx, hash)
		require.NoError(t, err)
		require.Equal(t, got.Checkpoint, byHash.Checkpoint)

		stale := row(5, "forked")
		ok, err = s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{Old: &stale, New: row(9, "h9")})
		require.NoError(t, err)
		require.False(t, ok, "the root hash is part of the comparison")
		ok, err = s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{Old: &first, New: row(9, "h9")})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{Old: &first, New: row(12, "h12")})
		require.NoError(t, err)
		require.False(t, ok, "a swap from a row that has changed does nothing")
		got, err = s.CosignedCheckpointGet(ctx, origin)
		require.NoError(t, err)
		require.Equal(t, uint64(9), got.Size)
	})

	t.Run("CosignedCheckpointSwapsRaceToOneWinner", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const origin, hash = "c.example/log", "c0de"
		base := store.CosignedCheckpoint{Origin: origin, OriginHash: hash, Size: 1, Hash: []byte("h1"), Checkpoint: []byte("cp1")}
		ok, err := s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{New: base})
		require.NoError(t, err)
		require.True(t, ok)

		// Sixteen writers read the same row and each tries to put its own checkpoint of size 2.
		const writers = 16
		var wg sync.WaitGroup
		wins := make(chan int, writers)
		for i := range writers {
			wg.Go(func() {
				next := base
				next.Size, next.Hash, next.Checkpoint = 2, fmt.Appendf(nil, "h2-%d", i), fmt.Appendf(nil, "cp2-%d", i)
				ok, err := s.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{Old: &base, New: next})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					wins <- i
				}
			})
		}
		wg.Wait()
		close(wins)
		var won []int
		for i := range wins {
			won = append(won, i)
		}
		require.Len(t, won, 1, "exactly one swap from one row")
		got, err := s.CosignedCheckpointGet(ctx, origin)
		require.NoError(t, err)
		require.Equal(t, fmt.Appendf(nil, "h2-%d", won[0]), got.Hash)
	})
}
