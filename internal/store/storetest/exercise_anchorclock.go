package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseAnchorClock(t *testing.T, setup setupFunc) {
	base := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

	t.Run("AnchorClockKeptToTheMicrosecond", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c, err := s.AnchorClockGet(ctx)
		require.NoError(t, err)
		require.Zero(t, c, "nothing recorded yet")

		for _, want := range []store.AnchorClock{
			{Last: base.Add(1234567 * time.Nanosecond), WrittenAt: base.Add(-time.Second)},
			{Last: base.Add(time.Hour), WrittenAt: base}, // a later write replaces it, whatever it holds
			{Last: base, WrittenAt: base},
		} {
			require.NoError(t, s.AnchorClockSet(ctx, want))
			got, err := s.AnchorClockGet(ctx)
			require.NoError(t, err)
			require.True(t, want.Last.Truncate(time.Microsecond).Equal(got.Last), "last: got %s, want %s", got.Last, want.Last)
			require.True(t, want.WrittenAt.Equal(got.WrittenAt), "written: got %s, want %s", got.WrittenAt, want.WrittenAt)
		}
	})

	t.Run("AnchorClockRollbackLeavesIt", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		require.NoError(t, s.AnchorClockSet(ctx, store.AnchorClock{Last: base, WrittenAt: base}))
		errRollback := errors.New("roll back")
		err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			require.NoError(t, tx.AnchorClockSet(ctx, store.AnchorClock{Last: base.Add(time.Hour), WrittenAt: base}))
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		c, err := s.AnchorClockGet(ctx)
		require.NoError(t, err)
		require.True(t, base.Equal(c.Last), "the rolled-back time is forgotten")
	})

	t.Run("AnchorClockTransactionsTakeTurns", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		require.NoError(t, s.AnchorClockSet(ctx, store.AnchorClock{Last: base, WrittenAt: base}))
		// Each transaction moves the clock a second on from what it read: none may read a time
		// another one is about to replace.
		tick := func(ctx context.Context, tx store.Executor) error {
			c, err := tx.AnchorClockGet(ctx)
			if err != nil {
				return err
			}
			return tx.AnchorClockSet(ctx, store.AnchorClock{Last: c.Last.Add(time.Second), WrittenAt: c.WrittenAt})
		}

		// One transaction holds the clock while another reads it: the second reads what the
		// first wrote.
		read, started, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		var firstErr, secondErr error
		wg.Go(func() {
			firstErr = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				c, err := tx.AnchorClockGet(ctx)
				if err != nil {
					return err
				}
				close(read)
				<-release
				return tx.AnchorClockSet(ctx, store.AnchorClock{Last: c.Last.Add(time.Second), WrittenAt: c.WrittenAt})
			})
		})
		<-read
		wg.Go(func() {
			close(started)
			secondErr = s.InTx(ctx, tick)
		})
		<-started
		close(release)
		wg.Wait()
		require.NoError(t, firstErr)
		require.NoError(t, secondErr)

		// And many at once.
		const n = 8
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = s.InTx(ctx, tick) })
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		c, err := s.AnchorClockGet(ctx)
		require.NoError(t, err)
		require.True(t, base.Add((n+2)*time.Second).Equal(c.Last), "every transaction's second counted: %s", c.Last)
	})
}
