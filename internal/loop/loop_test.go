package loop

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, 2 * time.Second},
		{1, 2 * time.Second},
		{2, 3 * time.Second},
		{3, 4500 * time.Millisecond},
		{4, 6750 * time.Millisecond},
		{20, time.Minute},
		{1000, time.Minute},
	} {
		require.Equal(t, tc.want, Backoff(tc.attempt, 2*time.Second, 1.5, time.Minute), "attempt %d", tc.attempt)
	}
	require.Equal(t, time.Second, Backoff(1, 5*time.Second, 2, time.Second), "initial above max is capped")
}

func TestJitter(t *testing.T) {
	t.Parallel()
	for range 1000 {
		d := Jitter(time.Second, 0.1)
		require.GreaterOrEqual(t, d, 900*time.Millisecond)
		require.LessOrEqual(t, d, 1100*time.Millisecond)
	}
	require.Equal(t, time.Duration(0), Jitter(0, 0.1))
}

func TestSleep(t *testing.T) {
	t.Parallel()
	require.True(t, Sleep(context.Background(), time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.False(t, Sleep(ctx, time.Hour))
	require.False(t, Sleep(ctx, 0))
}

func TestEvery(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	Every(ctx, time.Millisecond, func(context.Context) {
		calls++
		if calls == 3 {
			cancel()
		}
	})
	require.Equal(t, 3, calls)
}
