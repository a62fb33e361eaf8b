package pubsub

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRedeliveryDelay(t *testing.T) {
	t.Parallel()
	c := RedeliveryConfig{}.WithDefaults()
	require.Equal(t, time.Duration(0), c.Delay(1), "first rejection is redelivered at once")
	require.Equal(t, 2*time.Second, c.Delay(2))
	require.Equal(t, 3*time.Second, c.Delay(3))
	require.Equal(t, 4500*time.Millisecond, c.Delay(4))
	require.Equal(t, time.Minute, c.Delay(30))
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	base := errors.New("bad payload")
	err := fmt.Errorf("handle: %w", Permanent(base))
	require.True(t, IsPermanent(err))
	require.ErrorIs(t, err, base)
	require.False(t, IsPermanent(base))
	require.NoError(t, Permanent(nil))
}
