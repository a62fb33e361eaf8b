package devledger

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

func TestFaultPickerShares(t *testing.T) {
	t.Parallel()

	cfg := FaultConfig{Seed: 7, Unavailable: 0.10, TooManyRequests: 0.15, BadRequest: 0.05, Timeout: 0.02, Lost: 0.08, Invalid: 0.04}
	p := newFaultPicker(cfg)
	const n = 200_000
	counts := map[fault]int{}
	for i := range n {
		counts[p.pick(fmt.Sprintf("batch-%d", i), 0)]++
	}
	want := map[fault]float64{
		faultUnavailable: cfg.Unavailable, faultTooManyRequests: cfg.TooManyRequests,
		faultBadRequest: cfg.BadRequest, faultTimeout: cfg.Timeout, faultLost: cfg.Lost,
		faultInvalid: cfg.Invalid, faultNone: 0.56,
	}
	for f, share := range want {
		// 0.005 is more than 4 standard deviations of a share up to 0.5 over 200,000 draws.
		require.InDelta(t, share, float64(counts[f])/n, 0.005, "share of %s", f)
	}
}

func TestFaultPickerIsDeterministic(t *testing.T) {
	t.Parallel()

	cfg := FaultConfig{Seed: 42, Unavailable: 0.3, Lost: 0.3}
	a, b := newFaultPicker(cfg), newFaultPicker(cfg)
	cfg.Seed = 43
	c := newFaultPicker(cfg)
	differs, retryDiffers := 0, 0
	for i := range 1000 {
		key := fmt.Sprintf("k%d", i)
		require.Equal(t, a.pick(key, 0), b.pick(key, 0))
		require.Equal(t, a.pick(key, 5), b.pick(key, 5))
		if a.pick(key, 0) != c.pick(key, 0) {
			differs++
		}
		if a.pick(key, 0) != a.pick(key, 1) {
			retryDiffers++
		}
	}
	require.Greater(t, differs, 300, "another seed draws other faults")
	require.Greater(t, retryDiffers, 300, "a resubmission draws afresh")
}

func TestFaultPickerExtremes(t *testing.T) {
	t.Parallel()

	none := newFaultPicker(FaultConfig{Seed: 1})
	all := newFaultPicker(FaultConfig{Seed: 1, Lost: 1})
	for i := range 1000 {
		require.Equal(t, faultNone, none.pick(fmt.Sprint(i), 0))
		require.Equal(t, faultLost, all.pick(fmt.Sprint(i), 0))
	}
}

// TestFaultsOverHTTP submits batches to a faulty ledger and checks that every answer matches
// the fault the ledger counted, that lost batches stay UNKNOWN and that nothing is recorded
// twice.
func TestFaultsOverHTTP(t *testing.T) {
	t.Parallel()
	faults := FaultConfig{Seed: 2026, Unavailable: 0.1, TooManyRequests: 0.1, BadRequest: 0.1, Timeout: 0.04, Lost: 0.1, Invalid: 0.1}
	b := setup(t, Config{Faults: faults, HangTimeout: 20 * time.Millisecond})

	const n = 400
	answers := map[string]int{}
	var lost []sawtooth.Batch
	accepted := map[string]bool{}
	for i := range n {
		batch := b.build(t, fmt.Sprintf("%d.QmFaulty", i+1))
		code, doc := b.submit(t, batch.Bytes)
		kind := fmt.Sprint(code)
		if doc != nil && doc["error"] != nil {
			kind += fmt.Sprintf("/%v", apiCode(t, doc))
		}
		answers[kind]++
		if code == http.StatusAccepted {
			accepted[batch.ID] = true
			if b.status(t, batch.ID)["status"] == "UNKNOWN" {
				lost = append(lost, batch)
			}
		}
	}
	stats := b.srv.Stats()
	require.Equal(t, n, stats.Submissions)
	require.Equal(t, stats.Faults["unavailable"], answers["503/18"])
	require.Equal(t, stats.Faults["too_many_requests"], answers["429/31"])
	require.Equal(t, stats.Faults["bad_request"], answers["400/30"])
	require.Equal(t, stats.Faults["timeout"], answers["503/17"])
	require.Equal(t, len(accepted), answers["202"])
	require.Len(t, lost, stats.Faults["lost"])
	require.Equal(t, len(accepted)-len(lost)+stats.Faults["timeout"], stats.Accepted)
	require.Zero(t, stats.Duplicates)
	require.Zero(t, stats.Rejected)

	for kind, share := range map[string]float64{
		"unavailable": faults.Unavailable, "too_many_requests": faults.TooManyRequests,
		"bad_request": faults.BadRequest, "timeout": faults.Timeout, "lost": faults.Lost, "invalid": faults.Invalid,
	} {
		// 0.06 is about four standard deviations of a share of 0.1 over 400 submissions.
		require.InDelta(t, share, float64(stats.Faults[kind])/n, 0.06, "share of %s", kind)
	}

	b.clock.Advance(10 * time.Second)
	stats = b.srv.Stats()
	require.Equal(t, stats.Accepted, stats.Committed+stats.Invalid)
	require.Equal(t, stats.Faults["invalid"], stats.Invalid)
	for _, batch := range lost {
		require.Equal(t, "UNKNOWN", b.status(t, batch.ID)["status"], "a lost batch stays unknown")
	}
}

// TestFaultsAreReproducible runs the same submissions against two ledgers with one seed.
func TestFaultsAreReproducible(t *testing.T) {
	t.Parallel()
	faults := FaultConfig{Seed: 99, Unavailable: 0.25, TooManyRequests: 0.25, Lost: 0.25}
	first, second := setup(t, Config{Faults: faults}), setup(t, Config{Faults: faults})

	for i := range 60 {
		batch := first.build(t, fmt.Sprintf("%d.QmSame", i+1))
		for attempt := range 2 {
			c1, _ := first.submit(t, batch.Bytes)
			c2, _ := second.submit(t, batch.Bytes)
			require.Equal(t, c1, c2, "batch %d attempt %d", i, attempt)
		}
	}
	require.Equal(t, first.srv.Stats(), second.srv.Stats())
}
