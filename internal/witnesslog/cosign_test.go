package witnesslog

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/servicetest"
)

// cosignEntriesEnv makes TestCheckpointsAreCosignedByTwoLitewitnesses append more than 1,000
// entries (the long variant).
const cosignEntriesEnv = "ANCHORD_TEST_COSIGN_ENTRIES"

// twoLitewitnesses starts two litewitness instances that know the test's log, and returns
// them with a policy that needs both.
func twoLitewitnesses(t *testing.T, tb *testBundle) ([]*servicetest.Litewitness, []byte) {
	t.Helper()
	vkey, err := VerifierKey(testOrigin, tb.pub)
	require.NoError(t, err)
	ws := []*servicetest.Litewitness{
		servicetest.StartLitewitness(t, "w1.example/lw", vkey),
		servicetest.StartLitewitness(t, "w2.example/lw", vkey),
	}
	policy := ws[0].PolicyLine("w1") + ws[1].PolicyLine("w2") + "group both 2 w1 w2\nquorum both\n"
	return ws, []byte(policy)
}

// witnessClient reaches the test's witnesses.
func witnessClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// readServed GETs the checkpoint the log serves.
func readServed(t *testing.T, root string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(root + "checkpoint")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// cosignVerifiers are the verifiers of the log's key and of each witness's cosignatures, built
// with x/mod's and tessera's note packages, not anchord's.
func cosignVerifiers(t *testing.T, tb *testBundle, ws []*servicetest.Litewitness) note.Verifiers {
	t.Helper()
	vkey, err := note.NewEd25519VerifierKey(testOrigin, tb.pub)
	require.NoError(t, err)
	lv, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	vs := []note.Verifier{lv}
	for _, w := range ws {
		v, err := fnote.NewVerifierForCosignatureV1(w.VerifierKey)
		require.NoError(t, err)
		vs = append(vs, v)
	}
	return note.VerifierList(vs...)
}

// TestCheckpointsAreCosignedByTwoLitewitnesses: a log whose policy needs two litewitness
// instances grows to 1,000 entries; after every round, the checkpoint it serves carries the
// log's signature and both cosignatures, each verified with the witness's public key by the
// standard note verifier. The time each round of cosigning took is the figure of the
// cosignature latency.
func TestCheckpointsAreCosignedByTwoLitewitnesses(t *testing.T) {
	t.Parallel()
	entries := 1000
	if v := os.Getenv(cosignEntriesEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		entries = n
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			ws, policy := twoLitewitnesses(t, tb)
			tb.cfg.Witnessing = &WitnessingConfig{Policy: policy, Client: witnessClient()}
			l := b.open(t, tb.cfg)
			root := serve(t, l)
			ctx := anchordtest.Context(t, 5*time.Minute)
			verifiers := cosignVerifiers(t, tb, ws)

			code, _ := readServed(t, root)
			require.Equal(t, http.StatusNotFound, code, "nothing is served before it is cosigned")

			const rounds = 20
			var latencies []time.Duration
			for r := range rounds {
				idx := appendAll(t, l, testEntries(fmt.Sprintf("%s-%d", b.name, r), entries/rounds), 8)
				last := slices.Max(idx)
				_, err := l.await(ctx, last, l.reader.ReadCheckpoint)
				require.NoError(t, err)
				res, err := l.Cosign(ctx)
				require.NoError(t, err)
				if res.Outcome == CosignUnchanged {
					// The log published the checkpoint covering this round before an earlier
					// round's cosigning read it.
					continue
				}
				require.Equal(t, CosignCosigned, res.Outcome)
				latencies = append(latencies, res.Duration)

				code, raw := readServed(t, root)
				require.Equal(t, http.StatusOK, code)
				n, err := note.Open(raw, verifiers)
				require.NoError(t, err, "%s", raw)
				require.Len(t, n.Sigs, 3, "the log's signature and both cosignatures")
				cp, err := OpenCheckpoint(raw, testOrigin, tb.pub)
				require.NoError(t, err)
				require.Greater(t, cp.Size, last)
			}
			_, err := l.Cosign(ctx)
			require.NoError(t, err)
			code, raw := readServed(t, root)
			require.Equal(t, http.StatusOK, code)
			n, err := note.Open(raw, verifiers)
			require.NoError(t, err)
			require.Len(t, n.Sigs, 3)
			cp, err := OpenCheckpoint(raw, testOrigin, tb.pub)
			require.NoError(t, err)
			require.Equal(t, uint64(entries), cp.Size)

			slices.Sort(latencies)
			require.NotEmpty(t, latencies)
			t.Logf("%s: %d entries, %d checkpoints cosigned by both witnesses; cosignature latency p50 %s, p95 %s, max %s",
				b.name, entries, len(latencies), latencies[len(latencies)/2], latencies[len(latencies)*95/100], latencies[len(latencies)-1])
		})
	}
}

// TestWitnessesRefuseAForkedLog: the log is replaced on disk by another log of the same size,
// signed with the same key. Both litewitness instances refuse to cosign it (422), so nothing
// is served under the default fail-closed rule; with fail-open the fork is served with no
// cosignature, which a monitor requiring the quorum does not accept.
func TestWitnessesRefuseAForkedLog(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ws, policy := twoLitewitnesses(t, tb)
	reg := prometheus.NewRegistry()
	tb.cfg.Registerer = reg
	tb.cfg.Witnessing = &WitnessingConfig{Policy: policy, Client: witnessClient()}
	tb.cfg.CheckpointInterval = 200 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "log")
	ctx := anchordtest.Context(t, testTimeout)

	l := openPOSIX(t, tb.cfg, dir)
	appendAll(t, l, testEntries("original", 6), 1)
	_, err := l.await(ctx, 5, l.reader.ReadCheckpoint)
	require.NoError(t, err)
	res, err := l.Cosign(ctx)
	require.NoError(t, err)
	require.Equal(t, CosignCosigned, res.Outcome)
	require.NoError(t, l.Close(ctx))

	require.NoError(t, os.RemoveAll(dir))
	for _, failOpen := range []bool{false, true} {
		cfg := tb.cfg
		cfg.Registerer = prometheus.NewRegistry()
		w := *cfg.Witnessing
		w.FailOpen = failOpen
		cfg.Witnessing = &w
		l, err := OpenPOSIX(ctx, cfg, dir)
		require.NoError(t, err)
		root := serve(t, l)
		if !failOpen {
			appendAll(t, l, testEntries("forked", 6), 1)
		}
		_, err = l.await(ctx, 5, l.reader.ReadCheckpoint)
		require.NoError(t, err)

		res, err := l.Cosign(ctx)
		if !failOpen {
			require.Error(t, err)
			require.Equal(t, CosignFailed, res.Outcome)
			for _, w := range ws {
				host := w.URL[len("http://"):]
				require.Equal(t, 1.0, testutil.ToFloat64(l.m.witnessRequests.WithLabelValues(host, "422")),
					"litewitness %s refused the fork as inconsistent:\n%s", w.Name, w.Log())
			}
			code, _ := readServed(t, root)
			require.Equal(t, http.StatusNotFound, code, "fail-closed: the fork is not served")
		} else {
			require.NoError(t, err)
			require.Equal(t, CosignFailedOpen, res.Outcome)
			code, raw := readServed(t, root)
			require.Equal(t, http.StatusOK, code, "fail-open: the fork is served")
			n, err := note.Open(raw, cosignVerifiers(t, tb, ws))
			require.NoError(t, err)
			require.Len(t, n.Sigs, 1, "with the log's signature only")
		}
		require.NoError(t, l.Close(ctx))
	}
}
