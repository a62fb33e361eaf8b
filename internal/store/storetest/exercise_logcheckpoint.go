package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseLogCheckpoints(t *testing.T, setup setupFunc) {
	t.Run("LogCheckpointsOnlyAdvance", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		const origin = "b.example/log"

		_, err := s.LogCheckpointGet(ctx, origin)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.ErrorIs(t, s.LogCheckpointReject(ctx, origin, []byte("x")), store.ErrNotFound)

		ok, err := s.LogCheckpointAdvance(ctx, origin, []byte("cp5"), 5)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.LogCheckpointAdvance(ctx, origin, []byte("cp3"), 3)
		require.NoError(t, err)
		require.False(t, ok, "a smaller checkpoint never replaces a larger one")

		require.NoError(t, s.LogCheckpointReject(ctx, origin, []byte("forked")))
		c, err := s.LogCheckpointGet(ctx, origin)
		require.NoError(t, err)
		require.Equal(t, origin, c.Origin)
		require.Equal(t, []byte("cp5"), c.Checkpoint)
		require.Equal(t, uint64(5), c.Size)
		require.Equal(t, []byte("forked"), c.Rejected)
		require.False(t, c.UpdatedAt.IsZero())

		ok, err = s.LogCheckpointAdvance(ctx, origin, []byte("cp9"), 9)
		require.NoError(t, err)
		require.True(t, ok)
		c, err = s.LogCheckpointGet(ctx, origin)
		require.NoError(t, err)
		require.Equal(t, []byte("cp9"), c.Checkpoint)
		require.Nil(t, c.Rejected, "advancing clears the reported checkpoint")

		_, err = s.LogCheckpointGet(ctx, "c.example/log")
		require.ErrorIs(t, err, store.ErrNotFound, "logs are kept apart")

		require.NoError(t, s.LogCheckpointForget(ctx, origin))
		_, err = s.LogCheckpointGet(ctx, origin)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.NoError(t, s.LogCheckpointForget(ctx, origin), "forgetting twice is harmless")
	})
}
