package loadgen

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The interval bookkeeping is driven by explicit observations and explicit cut times: nothing
// here depends on the clock.
func TestIntervalsCountOnlyWhatHappenedInThem(t *testing.T) {
	t.Parallel()
	s := newStats()
	require.False(t, s.intervalPending(time.Minute, time.Second), "nothing observed yet")

	// First minute: 100 accepted POSTs of 1..100 ms, 20 refused, and two measured operations
	// resolved (1 s and 3 s).
	for i := 1; i <= 100; i++ {
		s.posted("create", time.Duration(i)*time.Millisecond, "")
	}
	for range 20 {
		s.posted("create", 500*time.Millisecond, "503:busy")
	}
	for _, lat := range []time.Duration{time.Second, 3 * time.Second} {
		s.followStart()
		s.followDone(time.Now(), lat, true, true)
	}
	// A follow that was not measured, and one that timed out, are no accept→resolvable sample.
	s.followStart()
	s.followDone(time.Now(), 9*time.Second, false, true)
	s.followStart()
	s.followDone(time.Now(), 0, true, false)
	require.True(t, s.intervalPending(30*time.Second, time.Second))

	first := s.cutInterval(time.Minute, nil)
	require.Equal(t, time.Duration(0), first.From)
	require.Equal(t, time.Minute, first.To)
	require.Equal(t, 100, first.Accepted)
	require.Equal(t, 20, first.Errors)
	require.InDelta(t, 100.0/60, first.AcceptedPerSec(), 1e-9)
	require.Equal(t, 60*time.Millisecond, first.POST[50], "p50 of 120 POSTs, 20 of them 500 ms")
	require.Equal(t, 500*time.Millisecond, first.POST[99])
	require.Equal(t, 2, first.Resolved)
	require.Equal(t, 3*time.Second, first.Resolve[95])
	require.Zero(t, first.GETs)

	// Second interval, 30 s long: 30 accepted POSTs of 2 ms, no resolution, 4 GETs (one 404).
	for range 30 {
		s.posted("create", 2*time.Millisecond, "")
	}
	for _, code := range []int{200, 200, 200, 404} {
		s.got(time.Millisecond, code)
	}
	require.False(t, s.intervalPending(time.Minute+500*time.Millisecond, time.Second), "shorter than the minimum")
	second := s.cutInterval(90*time.Second, nil)
	require.Equal(t, time.Minute, second.From)
	require.Equal(t, 90*time.Second, second.To)
	require.Equal(t, 30, second.Accepted)
	require.Zero(t, second.Errors)
	require.InDelta(t, 1.0, second.AcceptedPerSec(), 1e-9)
	require.Equal(t, 2*time.Millisecond, second.POST[99])
	require.Zero(t, second.Resolved)
	require.Empty(t, second.Resolve)
	require.Equal(t, 4, second.GETs)
	require.Equal(t, 3, second.GETsOK)

	require.Equal(t, "interval    0:00-1:00    accepted      2/s  errors    20  POST p50  60.0ms p99 500.0ms  accept→resolvable p95   3.00s (2 resolved)", first.Line())
	require.Equal(t, "interval    1:00-1:30    accepted      1/s  errors     0  POST p50   2.0ms p99   2.0ms  accept→resolvable p95       - (0 resolved)  GET      0/s (1 not 200) p50 1.0ms p99 1.0ms", second.Line())

	sum := s.summary(90 * time.Second)
	require.Equal(t, []Interval{first, second}, sum.Intervals)
	require.Equal(t, 4, sum.GETs)
	require.Equal(t, 1, sum.Errors["GET:404"])
	require.Equal(t, 1, sum.FollowTimeouts)
	require.Equal(t, "1:01:05", fmtClock(time.Hour+65*time.Second))
}

func TestParseDIDs(t *testing.T) {
	t.Parallel()
	dids, err := parseDIDs(strings.NewReader("create EiA -\nupdate EiA rv\ncreate EiB -\n\nEiC\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"EiA", "EiB", "EiC"}, dids, "the creates of an --accepted-out file, and bare suffixes")

	_, err = parseDIDs(strings.NewReader("create EiA\n"))
	require.ErrorContains(t, err, "line 1")
	_, err = parseDIDs(strings.NewReader("update EiA rv\n"))
	require.ErrorContains(t, err, "no DID")
}

// A resolve run measures GETs of DIDs another run created: from its --accepted-out file, or,
// without one, of the DIDs its own warm-up published. --interval prints lines while it runs.
func TestResolveRunAgainstAnEmbeddedServer(t *testing.T) {
	t.Parallel()
	target := startAnchord(t)
	accepted := filepath.Join(t.TempDir(), "accepted.txt")
	created, _, err := load(t, "--target", target, "--concurrency", "8", "--duration", "0s", "--count", "40",
		"--sample-every", "1", "--accepted-out", accepted)
	require.NoError(t, err)
	require.Equal(t, 40, created.Accepted)
	require.Equal(t, 40, created.Followed, "every create resolved before the resolve run starts")

	sum, out, err := load(t, "--target", target, "--concurrency", "4", "--duration", "2500ms", "--interval", "1s",
		"--mix", "resolve=100", "--resolve-dids", accepted)
	require.NoError(t, err, out)
	require.Contains(t, out, "resolve: 40 DIDs from "+accepted)
	require.NotContains(t, out, "warm-up", "the file gives the DIDs")
	require.Positive(t, sum.GETs)
	require.Equal(t, sum.GETs, sum.GETsOK, "every known DID resolves: %v", sum.Errors)
	require.Zero(t, sum.Sent, "nothing posted")
	require.Positive(t, sum.GET[99])
	require.Contains(t, out, "\nsummary: "+strconv.Itoa(sum.GETs)+" GETs in ")
	require.Contains(t, out, "GET/s, "+strconv.Itoa(sum.GETs)+" answered 200")
	require.NotContains(t, out, "POST latency:", "a resolve-only run posted nothing")
	require.GreaterOrEqual(t, len(sum.Intervals), 2)
	require.Equal(t, len(sum.Intervals), strings.Count(out, "\ninterval "))
	gets := 0
	for _, i := range sum.Intervals {
		gets += i.GETs
	}
	require.LessOrEqual(t, gets, sum.GETs, "intervals cover the timed phase")
	require.Positive(t, gets)

	pool, out, err := load(t, "--target", target, "--concurrency", "4", "--duration", "1s",
		"--mix", "resolve=100", "--warmup-dids", "10")
	require.NoError(t, err, out)
	require.Contains(t, out, "warm-up: creating 10 DIDs")
	require.Positive(t, pool.GETs)
	require.Equal(t, pool.GETs, pool.GETsOK)
	require.Zero(t, pool.Sent, "the warm-up published DIDs to resolve: no pick fell back to a create")
}

func TestResolveDIDsFileMustExist(t *testing.T) {
	t.Parallel()
	target := startAnchord(t)
	var out bytes.Buffer
	cfg, err := Load([]string{"--target", target, "--mix", "resolve=1", "--resolve-dids", filepath.Join(t.TempDir(), "none")},
		func(string) (string, bool) { return "", false }, &out)
	require.NoError(t, err)
	_, err = Run(context.Background(), cfg, &out)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "--resolve-dids")
}
