package amqppubsub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// waitTimeoutTest bounds waits for things that must happen.
const waitTimeoutTest = 20 * time.Second

// running is a PubSub whose Run loop the test started; Close stops Run first, as the contract
// requires.
type running struct {
	*PubSub
	stop func()
}

func (r *running) Close() error {
	r.stop()
	return r.PubSub.Close()
}

// startPubSub builds an instance on cfg, starts Run, and stops and closes it at cleanup.
func startPubSub(tb testing.TB, cfg Config) *running {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = anchordtest.Logger(tb)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	cfg.ReconnectInterval = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ps, err := New(ctx, cfg)
	require.NoError(tb, err)
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ps.Run(runCtx) }()
	var once sync.Once
	r := &running{PubSub: ps, stop: func() {
		once.Do(func() {
			stopRun()
			require.NoError(tb, <-done)
		})
	}}
	tb.Cleanup(func() { require.NoError(tb, r.Close()) })
	return r
}

// removeOnCleanup deletes the queues and exchange of cfg's prefix when the test ends; register
// it before the instances, so that it runs after they are closed.
func removeOnCleanup(tb testing.TB, cfg Config) {
	tb.Helper()
	tb.Cleanup(func() { require.NoError(tb, RemoveTopology(cfg)) })
}

// testPrefix is a fresh prefix, so that tests sharing the broker never meet.
func testPrefix(tb testing.TB) string {
	tb.Helper()
	var b [5]byte
	_, err := rand.Read(b[:])
	require.NoError(tb, err)
	return "anchordtest-" + hex.EncodeToString(b[:])
}
