package amqppubsub

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/pubsub"
)

func TestWaitTiers(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, n := range v {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name     string
		r        pubsub.RedeliveryConfig
		maxTiers int
		want     []time.Duration
	}{
		{"orb defaults", pubsub.RedeliveryConfig{}.WithDefaults(), 32,
			ms(2000, 3000, 4500, 6750, 10125, 15187, 22781, 34171, 51257, 60000)},
		{"test schedule", pubsub.RedeliveryConfig{MaxAttempts: 5, InitialInterval: 100 * time.Millisecond, Multiplier: 2, MaxInterval: 300 * time.Millisecond}, 32,
			ms(100, 200, 300)},
		{"constant", pubsub.RedeliveryConfig{MaxAttempts: 10, InitialInterval: time.Second, Multiplier: 1, MaxInterval: time.Minute}, 32,
			ms(1000)},
		{"two attempts still has a tier", pubsub.RedeliveryConfig{MaxAttempts: 2, InitialInterval: 250 * time.Millisecond, Multiplier: 2, MaxInterval: time.Minute}, 32,
			ms(250)},
		{"thinned to the limit", pubsub.RedeliveryConfig{MaxAttempts: 30, InitialInterval: time.Second, Multiplier: 1.5, MaxInterval: time.Hour}, 4,
			ms(1000, 17085, 291929, 3600000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := waitTiers(tt.r, tt.maxTiers)
			require.Equal(t, tt.want, got)
			require.LessOrEqual(t, len(got), tt.maxTiers)
		})
	}
}

func TestWaitTiersRealiseSchedule(t *testing.T) {
	t.Parallel()
	// Every redelivery wait of the schedule has a tier of its own (one hop, exact delay).
	r := pubsub.RedeliveryConfig{}.WithDefaults()
	topo := newTopology(Config{Redelivery: r, MaxWaitTiers: MaxWaitTiersDefault}.withDefaults())
	for n := 2; n < r.MaxAttempts; n++ {
		d := r.Delay(n)
		require.Equal(t, d.Truncate(time.Millisecond), topo.tierFor(d), "Delay(%d)", n)
	}
}

func TestTierFor(t *testing.T) {
	t.Parallel()
	topo := &topology{tiers: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}}
	tests := []struct{ remaining, want time.Duration }{
		{time.Millisecond, 100 * time.Millisecond}, // shorter than every tier: the shortest
		{100 * time.Millisecond, 100 * time.Millisecond},
		{250 * time.Millisecond, 200 * time.Millisecond},
		{time.Hour, 300 * time.Millisecond},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, topo.tierFor(tt.remaining), "remaining %s", tt.remaining)
	}
}

func TestQueueNames(t *testing.T) {
	t.Parallel()
	topo := newTopology(Config{Prefix: "p", Topics: []string{"a"},
		Redelivery: pubsub.RedeliveryConfig{MaxAttempts: 3, InitialInterval: time.Second, Multiplier: 2, MaxInterval: time.Minute},
	}.withDefaults())
	require.Equal(t, []string{"p.a", "p.delay.1000ms", "p.parked", "p.redelivery"}, topo.queueNames())
	topic, ok := topo.topicOf("p.a")
	require.True(t, ok)
	require.Equal(t, "a", topic)
}
