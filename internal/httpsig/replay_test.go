package httpsig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func key(b byte) sigKey {
	var k sigKey
	k[0] = b
	return k
}

func TestReplayCache(t *testing.T) {
	t.Parallel()

	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

	t.Run("refuses a signature until it expires", func(t *testing.T) {
		t.Parallel()
		c := newReplayCache(10*time.Minute, 10)
		require.NoError(t, c.add(key(1), t0))
		require.True(t, c.seen(key(1), t0.Add(time.Minute)))
		require.ErrorIs(t, c.add(key(1), t0.Add(9*time.Minute)), errReplay)
		require.True(t, c.seen(key(1), t0.Add(10*time.Minute)))
		require.False(t, c.seen(key(1), t0.Add(10*time.Minute+1)))
		require.NoError(t, c.add(key(1), t0.Add(10*time.Minute+1)))
		require.Equal(t, 1, c.len())
	})

	t.Run("full cache refuses rather than forgets", func(t *testing.T) {
		t.Parallel()
		c := newReplayCache(10*time.Minute, 3)
		for i := range 3 {
			require.NoError(t, c.add(key(byte(i)), t0.Add(time.Duration(i)*time.Minute)))
		}
		require.ErrorIs(t, c.add(key(9), t0.Add(5*time.Minute)), errReplayCacheFull)
		// Every live entry is still refused.
		for i := range 3 {
			require.ErrorIs(t, c.add(key(byte(i)), t0.Add(5*time.Minute)), errReplay)
		}
		// Once the oldest has expired, there is room for exactly one more.
		require.ErrorIs(t, c.add(key(9), t0.Add(10*time.Minute)), errReplayCacheFull)
		require.NoError(t, c.add(key(9), t0.Add(10*time.Minute+1)))
		require.ErrorIs(t, c.add(key(10), t0.Add(10*time.Minute+1)), errReplayCacheFull)
		require.ErrorIs(t, c.add(key(1), t0.Add(10*time.Minute+1)), errReplay)
	})

	t.Run("steady use keeps the FIFO bounded", func(t *testing.T) {
		t.Parallel()
		c := newReplayCache(time.Second, 100)
		for i := range 10_000 {
			var k sigKey
			k[0], k[1] = byte(i), byte(i>>8)
			require.NoError(t, c.add(k, t0.Add(time.Duration(i)*100*time.Millisecond)))
		}
		require.LessOrEqual(t, c.len(), 11)
		require.LessOrEqual(t, len(c.fifo), 2*11+1)
	})

	t.Run("old FIFO slot does not delete a newer entry", func(t *testing.T) {
		t.Parallel()
		c := newReplayCache(10*time.Minute, 10)
		a, b, cc, d := key(1), key(2), key(3), key(4)
		require.NoError(t, c.add(a, t0))
		// The clock steps back: b expires before a but sits behind it in the FIFO.
		require.NoError(t, c.add(b, t0.Add(-5*time.Minute)))
		require.NoError(t, c.add(cc, t0.Add(6*time.Minute)))
		// b has expired, so it may be accepted again; it gets a second FIFO slot.
		require.NoError(t, c.add(b, t0.Add(6*time.Minute)))
		// Dropping a (and b's first slot) must leave b's new entry in place.
		require.NoError(t, c.add(d, t0.Add(10*time.Minute+1)))
		require.False(t, c.seen(a, t0.Add(10*time.Minute+1)))
		require.True(t, c.seen(b, t0.Add(10*time.Minute+1)))
		require.ErrorIs(t, c.add(b, t0.Add(15*time.Minute)), errReplay)
		require.Equal(t, 3, c.len())
	})
}
