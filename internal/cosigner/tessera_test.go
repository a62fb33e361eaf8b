package cosigner

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/servicetest"
	"github.com/anchord/anchord/internal/store/storetest"
)

// tesseraEntriesEnv makes TestTesseraDrivesAnchordAsWitness grow its log further than the
// default 10,000 entries.
const tesseraEntriesEnv = "ANCHORD_TEST_COSIGNER_ENTRIES"

// witnessPolicyLine is one witness line of a tessera (sigsum) witness policy.
func witnessPolicyLine(name, vkey, url string) string {
	return fmt.Sprintf("witness %s %s %s\n", name, vkey, url)
}

// TestTesseraDrivesAnchordAsWitness: a tessera log whose witness policy needs anchord's
// witness and a litewitness grows to 10,000 entries; tessera's own witness client obtains a
// cosignature for every checkpoint it publishes, and each one verifies with the standard note
// verifier. Then a replay is answered 409, a bad proof 422, a forged log signature 403, an
// unknown log 404.
func TestTesseraDrivesAnchordAsWitness(t *testing.T) {
	t.Parallel()
	entries := 10_000
	if v := os.Getenv(tesseraEntriesEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		entries = n
	}
	ctx, cancel := context.WithCancel(anchordtest.Context(t, 5*time.Minute))
	defer cancel()

	skey, vkey, err := note.GenerateKey(nil, "tessera.example/log")
	require.NoError(t, err)
	logSigner, err := note.NewSigner(skey)
	require.NoError(t, err)
	logs, err := NewKnownLogs(KnownLogsConfig{Static: []string{vkey}})
	require.NoError(t, err)
	key := testKey(t, true)
	w, err := New(Config{Key: key, Logs: logs, Checkpoints: storetest.Open(t, storetest.SQLiteOpener(t)), Logger: anchordtest.DiscardLogger()})
	require.NoError(t, err)
	mux := http.NewServeMux()
	w.Register(mux)
	rec := &recorder{next: mux}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)

	// An independent witness beside anchord: both must cosign every checkpoint.
	lw := servicetest.StartLitewitness(t, "lw.example/w", vkey)
	policy := witnessPolicyLine("anchord", key.VerifierKeys()[0], srv.URL+Prefix) + lw.PolicyLine("litewitness") +
		"group both 2 anchord litewitness\nquorum both\n"
	group, err := tessera.NewWitnessGroupFromPolicy([]byte(policy))
	require.NoError(t, err)
	drv, err := posix.New(ctx, posix.Config{Path: t.TempDir()})
	require.NoError(t, err)
	opts := tessera.NewAppendOptions().WithCheckpointSigner(logSigner).
		WithBatching(256, 20*time.Millisecond).WithCheckpointInterval(100*time.Millisecond).
		WithWitnesses(group, &tessera.WitnessOptions{Timeout: 10 * time.Second})
	appender, _, reader, err := tessera.NewAppender(ctx, drv, opts)
	require.NoError(t, err)

	wv, err := fnote.NewVerifierForCosignatureV1(key.VerifierKeys()[0])
	require.NoError(t, err)
	lv, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	// The log grows in rounds, so that tessera publishes (and has cosigned) many checkpoints.
	const rounds = 20
	for r := range rounds {
		futures := make([]tessera.IndexFuture, 0, entries/rounds)
		for i := range entries / rounds {
			futures = append(futures, appender.Add(ctx, tessera.NewEntry(fmt.Appendf(nil, "entry %d.%d", r, i))))
		}
		for _, f := range futures {
			_, err := f()
			require.NoError(t, err)
		}
	}
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool { return publishedSize(ctx, reader) == uint64(entries) })

	// Every cosignature anchord gave verifies with the standard verifier, over the checkpoint
	// tessera sent; and every checkpoint tessera published carries one.
	exchanges := rec.taken()
	require.GreaterOrEqual(t, len(exchanges), 2, "checkpoints were witnessed as the log grew")
	for _, x := range exchanges {
		req, err := ParseAddCheckpoint(x.body)
		require.NoError(t, err)
		n, err := note.Open(append(bytes.Clone(req.Checkpoint), x.answer...), note.VerifierList(wv))
		require.NoError(t, err)
		require.Len(t, n.Sigs, 1)
	}
	raw, err := reader.ReadCheckpoint(ctx)
	require.NoError(t, err)
	lwv, err := fnote.NewVerifierForCosignatureV1(lw.VerifierKey)
	require.NoError(t, err)
	n, err := note.Open(raw, note.VerifierList(lv, wv, lwv))
	require.NoError(t, err)
	require.Len(t, n.Sigs, 3, "the published checkpoint carries the log's signature and both cosignatures")
	t.Logf("%d entries, %d checkpoints cosigned by anchord", entries, len(exchanges))

	// The witness now holds the log's latest checkpoint. Replaying an earlier state is a 409.
	post := func(body []byte) int {
		resp, err := http.Post(srv.URL+Prefix+"/add-checkpoint", "text/plain", bytes.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusConflict, post(append([]byte("old 0\n\n"), raw...)), "a replay from size 0")
	// A checkpoint one entry larger, signed by the log, whose proof does not verify: 422.
	text := fmt.Sprintf("tessera.example/log\n%d\n%s\n", entries+1, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	signed, err := note.Sign(&note.Note{Text: text}, logSigner)
	require.NoError(t, err)
	bogus := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	require.Equal(t, http.StatusUnprocessableEntity, post(fmt.Appendf(nil, "old %d\n%s\n\n%s", entries, bogus, signed)), "a bad proof")
	// The same checkpoint signed by another key under the log's name: 403.
	forgerKey, _, err := note.GenerateKey(nil, "tessera.example/log")
	require.NoError(t, err)
	forger, err := note.NewSigner(forgerKey)
	require.NoError(t, err)
	forged, err := note.Sign(&note.Note{Text: text}, forger)
	require.NoError(t, err)
	require.Equal(t, http.StatusForbidden, post(fmt.Appendf(nil, "old %d\n%s\n\n%s", entries, bogus, forged)), "a forged log signature")
	// A log the witness does not know: 404.
	otherKey, _, err := note.GenerateKey(nil, "other.example/log")
	require.NoError(t, err)
	other, err := note.NewSigner(otherKey)
	require.NoError(t, err)
	unknown, err := note.Sign(&note.Note{Text: strings.Replace(text, "tessera.example/log", "other.example/log", 1)}, other)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, post(append([]byte("old 0\n\n"), unknown...)), "an unknown origin")
	cancel()
}

func publishedSize(ctx context.Context, r tessera.LogReader) uint64 {
	raw, err := r.ReadCheckpoint(ctx)
	if err != nil {
		return 0
	}
	lines := strings.Split(string(raw), "\n")
	if len(lines) < 2 {
		return 0
	}
	size, _ := strconv.ParseUint(lines[1], 10, 64)
	return size
}

// exchange is an add-checkpoint request the witness answered with 200, and its answer.
type exchange struct{ body, answer []byte }

// recorder keeps every successful add-checkpoint exchange.
type recorder struct {
	next http.Handler
	mu   sync.Mutex
	xs   []exchange
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	rw := httptest.NewRecorder()
	r.next.ServeHTTP(rw, req)
	if rw.Code == http.StatusOK && req.Method == http.MethodPost {
		r.mu.Lock()
		r.xs = append(r.xs, exchange{body, rw.Body.Bytes()})
		r.mu.Unlock()
	}
	for k, v := range rw.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rw.Code)
	_, _ = w.Write(rw.Body.Bytes())
}

func (r *recorder) taken() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.xs...)
}
