package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/daemon"
)

// startAnchord runs an embedded anchord in this process until the test ends; opts change its
// configuration.
func startAnchord(t *testing.T, opts ...func(*config.Config)) string {
	t.Helper()
	cfg := config.Default()
	cfg.HostURL = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	cfg.BatchWriterTimeout = 100 * time.Millisecond
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, cfg, daemon.Options{Logger: anchordtest.DiscardLogger(), Ready: func(addr string) { ready <- addr }})
	}()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + anchordtest.WaitOrTimeout(t, ready, 30*time.Second)
}

func TestMixedRunAgainstAnEmbeddedServer(t *testing.T) {
	t.Parallel()
	target := startAnchord(t)
	accepted := filepath.Join(t.TempDir(), "accepted.txt")
	report := filepath.Join(t.TempDir(), "report.html")
	var out bytes.Buffer
	cfg, err := Load([]string{
		"--target", target, "--concurrency", "4", "--duration", "2s", "--mix", "create=40,update=40,recover=10,deactivate=10",
		"--warmup-dids", "20", "--sample-every", "5", "--accepted-out", accepted, "--report", report,
	}, func(string) (string, bool) { return "", false }, &out)
	require.NoError(t, err)
	sum, err := Run(context.Background(), cfg, &out)
	require.NoError(t, err, out.String())

	require.Positive(t, sum.Accepted)
	require.Equal(t, sum.Sent, sum.Accepted, "every generated operation is valid: %v", sum.Errors)
	require.Positive(t, sum.AcceptedByType["create"])
	require.Positive(t, sum.AcceptedByType["update"], "published DIDs were updated")
	require.Positive(t, sum.Followed)
	require.Zero(t, sum.FollowTimeouts)
	require.Positive(t, sum.POST[50])
	require.Positive(t, sum.Resolve[95])
	require.Contains(t, out.String(), "summary:")
	require.Contains(t, out.String(), "accept→resolvable")

	lines, err := os.ReadFile(accepted)
	require.NoError(t, err)
	require.Positive(t, sum.WarmupAccepted)
	require.Len(t, strings.Split(strings.TrimSpace(string(lines)), "\n"), sum.WarmupAccepted+sum.Accepted, "one line per accepted operation, warm-up included")

	require.Contains(t, out.String(), "pre-flight: "+target+" is anchord")
	require.Positive(t, sum.Usage.Cores, "the machine's cores are read")
	require.Positive(t, sum.Usage.ServerCores, "the server's CPU is read from its /metrics")
	require.Contains(t, out.String(), "cpu:              machine ")
	require.NotEmpty(t, sum.Series)
	require.NotEmpty(t, sum.Samples)
	page, err := os.ReadFile(report)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(page), "<svg "), "three plots")
	for _, s := range []string{"Accepted operations per second", "POST latency percentiles", "Accept → resolvable", "<polyline", "<circle"} {
		require.Contains(t, string(page), s)
	}
	require.NotContains(t, string(page), "<script", "self-contained, no script")
}

func TestConfigErrorsNameTheParameter(t *testing.T) {
	t.Parallel()
	env := func(string) (string, bool) { return "", false }
	for args, want := range map[string]string{
		"--target ftp://x":           "--target",
		"--concurrency 0":            "--concurrency",
		"--mix create=1,delete=1":    "--mix",
		"--duration -1s":             "--duration",
		"--target http://a,nonsense": "--target",
		"--key-pool 1":               "--key-pool",
		"--rate -5":                  "--rate",
		"--interval -1s":             "--interval",
	} {
		_, err := Load(strings.Fields(args), env, &bytes.Buffer{})
		require.ErrorContains(t, err, want, args)
	}
}

// TestCountAloneBoundsTheRun: --count without --duration loads the count however long it takes;
// neither given is the default duration.
func TestCountAloneBoundsTheRun(t *testing.T) {
	t.Parallel()
	env := func(string) (string, bool) { return "", false }
	cfg, err := Load([]string{"--count", "10000000"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Zero(t, cfg.Duration)
	require.Equal(t, 10_000_000, cfg.Count)
	cfg, err = Load(nil, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, DurationDefault, cfg.Duration)
	cfg, err = Load([]string{"--count", "5", "--duration", "1m"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, time.Minute, cfg.Duration)
}

func TestPercentilesAndMix(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	p := percentiles(ds)
	require.Equal(t, 50*time.Millisecond, p[50])
	require.Equal(t, 95*time.Millisecond, p[95])
	require.Equal(t, 100*time.Millisecond, p[100])
	require.Empty(t, percentiles(nil))

	m, err := parseMix("create=1,update=3")
	require.NoError(t, err)
	counts := map[string]int{}
	for i := range 400 {
		counts[m.pick(i)]++
	}
	require.Equal(t, map[string]int{"create": 100, "update": 300}, counts)
	require.False(t, m.onlyCreates())
}

// TestPostTriesEveryTarget: with one of two targets dead, every operation is answered by the
// other. The workers share the turn, so a retry that took the next turn could meet the dead
// target again, and count an operation the live target would have taken as unanswered.
func TestPostTriesEveryTarget(t *testing.T) {
	t.Parallel()
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(live.Close)
	dead := "http://" + anchordtest.FreeAddr(t)
	r := &runner{targets: []string{dead, live.URL}, stats: newStats()}
	var err error
	r.wire, err = newWire(r.targets, 16, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(r.wire.close)

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				r.post(context.Background(), "create", "suffix", "reveal", []byte(`{}`))
			}
		})
	}
	wg.Wait()
	sum := r.stats.summary(time.Second)
	require.Zero(t, sum.NoAnswer, "errors: %v", sum.Errors)
	require.Equal(t, 200, sum.Accepted)
}

// TestRefusalsAreCountedByWhatTheServerSaid: a refusal is counted by its JSON code, or, from a
// did:orb server, which answers in Orb's plain text, by the start of that text; a server that
// quotes every request in its refusal adds no more than errorKindsMax names.
func TestRefusalsAreCountedByWhatTheServerSaid(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch i := n.Add(1); {
		case i <= 3:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":"invalid_signature","message":"no"}`)
		case i <= 5:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "bad request: missing signing key\n")
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusConflict)
			_, _ = fmt.Fprintf(w, "request %d quoted back at its sender, at some length to be cut", i)
		}
	}))
	t.Cleanup(srv.Close)
	r := &runner{targets: []string{srv.URL}, stats: newStats()}
	var err error
	r.wire, err = newWire(r.targets, 1, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(r.wire.close)

	for range 105 {
		require.False(t, r.post(context.Background(), "create", "suffix", "reveal", []byte(`{}`)))
	}
	sum := r.stats.summary(time.Second)
	require.Zero(t, sum.Accepted)
	require.Equal(t, 3, sum.Errors["400:invalid_signature"])
	require.Equal(t, 2, sum.Errors[`400:"bad request: missing signing key"`])
	require.Len(t, sum.Errors, errorKindsMax+1, "errors: %v", sum.Errors)
	require.Equal(t, 100-(errorKindsMax-2), sum.Errors["other"])
	require.Equal(t, 1, sum.Errors[`409:"request 6 quoted back at its sender, at some len…"`])
}
