package main

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// TestLoggedWitnessLatency measures accept→published at A for 100 creates, one at a time every
// 100 ms, with one honest witness C keeping a log under "OutOf(1,system) LogRequired". A's
// proof monitor runs only every ten minutes, so every DID published in the test was completed
// by a proof verified as it arrived: C answers once its checkpoint covers the credential.
func TestLoggedWitnessLatency(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", append(slices.Clone(witnessTiming), "--vct-monitoring-interval", "10m")...)
	c := startDomain(t, "C", "--witness-log")
	a.admin("policy", "set", "OutOf(1,system) LogRequired")
	a.invite(c)

	// One DID first, so that A has learnt that C keeps a log before the measured ones.
	warm := newFedLoad(t, a.api)
	warm.creates(1, 1)
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return warm.publishedAt(a) == 1
	}, "the first DID is published")

	const n = 100
	w := wallet.New(wallet.Config{})
	load := newFedLoad(t, a.api)
	var mu sync.Mutex
	accepted := map[string]time.Time{}
	published := map[string]time.Duration{}
	done := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		// Polls every DID accepted and not yet published, noting when it first resolves as published.
		for {
			mu.Lock()
			var open []string
			for did := range accepted {
				if _, ok := published[did]; !ok {
					open = append(open, did)
				}
			}
			mu.Unlock()
			for _, did := range open {
				if r := a.resolve(did); r.published {
					now := time.Now()
					mu.Lock()
					published[did] = now.Sub(accepted[did])
					mu.Unlock()
				}
			}
			select {
			case <-done:
				if len(open) == 0 {
					return
				}
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	for range n {
		id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
		require.NoError(t, err)
		require.True(t, load.post(req))
		mu.Lock()
		accepted[id.DID()] = time.Now()
		mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	anchordtest.Eventually(t, 2*time.Minute, 100*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(published) == n
	}, "every DID is published")
	close(done)
	watch.Wait()
	var ds []time.Duration
	for _, d := range published {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	t.Logf("accept→published with a logged witness under LogRequired: %s", percentiles(ds))

	added := witnessMetric(t, a, `anchord_witness_proofs_total{outcome="added"}`)
	require.Positive(t, added)
	require.Equal(t, added, witnessMetric(t, a, `anchord_witness_log_promises_total{outcome="verified"}`),
		"every proof was verified as it arrived: the proof monitor has not run")
}
