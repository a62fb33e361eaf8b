package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cosigner"
	"github.com/anchord/anchord/internal/logmonitor"
	"github.com/anchord/anchord/internal/servicetest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/witnesslog"
)

// cosignCreatesEnv makes TestWitnessLogCosignedByTwoLitewitnessesAndItsFork create another
// number of DIDs than 300 (1,000 with ANCHORD_TEST_FED_FULL=1).
const cosignCreatesEnv = "ANCHORD_TEST_COSIGN_CREATES"

// TestWitnessLogCosignedByTwoLitewitnessesAndItsFork: B keeps a witness log whose policy needs
// two litewitness instances; A has B witness its anchors, follows B, and accepts B's
// checkpoints only with both cosignatures (--witness-log-monitor-policy). (1) While A creates
// 300 DIDs, every checkpoint B serves carries B's signature and both cosignatures, each
// verified with x/mod's note verifier and the witness's public key. (2) B's log is then
// replaced on disk by a different log of the same size signed with B's key, and B restarted
// fail-open, as a domain bent on showing its fork would: both litewitnesses refuse to cosign
// it (422), and A's log consistency monitor reports the fork with both checkpoints.
func TestWitnessLogCosignedByTwoLitewitnessesAndItsFork(t *testing.T) {
	t.Parallel()
	// The creates take the test's time (the posts, not the witnessing: batches are witnessed as
	// fast as they are cut); 1,000 took three of its four minutes in a busy machine's suite.
	creates := 300
	if os.Getenv("ANCHORD_TEST_FED_FULL") == "1" {
		creates = 1000
	}
	if v := os.Getenv(cosignCreatesEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		creates = n
	}
	keyFile, keyB := writeKeyFile(t)
	pubB := keyB.Public().(ed25519.PublicKey)
	w1 := servicetest.StartLitewitness(t, "w1.example/lw")
	w2 := servicetest.StartLitewitness(t, "w2.example/lw")
	policyFile := filepath.Join(t.TempDir(), "witnesses")
	policy := w1.PolicyLine("w1") + w2.PolicyLine("w2") + "group both 2 w1 w2\nquorum both\n"
	require.NoError(t, os.WriteFile(policyFile, []byte(policy), 0o600))

	bArgs := []string{"--witness-log", "--key-file", keyFile, "--witness-log-witnesses", policyFile, "--max-witness-delay", "8s"}
	b := startDomain(t, "B", bArgs...)
	origin, err := witnesslog.OriginFor("http://" + b.addr)
	require.NoError(t, err)
	vkey, err := witnesslog.VerifierKey(origin, pubB)
	require.NoError(t, err)
	w1.AddLogs(vkey)
	w2.AddLogs(vkey)

	// Batches of at most 10 operations: the 300 creates make thirty anchors or more, so B's log
	// grows by as many entries, over many checkpoints.
	a := startDomain(t, "A", append(slices.Clone(witnessTiming), append(slices.Clone(logTiming),
		"--witness-log-monitor-policy", policyFile, "--max-operation-count", "10")...)...)
	a.invite(b)
	a.follow(b)

	bv, err := note.NewVerifier(mustEd25519VKey(t, origin, pubB))
	require.NoError(t, err)
	v1, err := fnote.NewVerifierForCosignatureV1(w1.VerifierKey)
	require.NoError(t, err)
	v2, err := fnote.NewVerifierForCosignatureV1(w2.VerifierKey)
	require.NoError(t, err)
	verifiers := note.VerifierList(bv, v1, v2)

	// Every checkpoint B serves while the DIDs are created is read and kept.
	served := map[string]bool{}
	var mu sync.Mutex
	ctx, stopReading := context.WithCancel(context.Background())
	var readers sync.WaitGroup
	readers.Go(func() {
		for ctx.Err() == nil {
			if raw, ok := readCheckpoint(t, b); ok {
				mu.Lock()
				served[string(raw)] = true
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	load := newFedLoad(t, a.api)
	for round := range 10 {
		load.creates(creates/10, 8)
		t.Logf("round %d: %d creates posted", round, creates/10*(round+1))
	}
	anchordtest.Eventually(t, 2*time.Minute, 500*time.Millisecond, func() bool {
		return load.publishedAt(a) == len(load.dids())
	}, "A's DIDs are published, witnessed by B")
	treeSize, _ := scrape(t, b, "anchord_witnesslog_tree_size")
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		raw, ok := readCheckpoint(t, b)
		if !ok {
			return false
		}
		cp, err := witnesslog.OpenCheckpoint(raw, origin, pubB)
		return err == nil && float64(cp.Size) == treeSize
	}, "B serves a cosigned checkpoint of its whole log")
	stopReading()
	readers.Wait()
	if raw, ok := readCheckpoint(t, b); ok {
		served[string(raw)] = true
	}
	require.NotEmpty(t, served)
	for raw := range served {
		n, err := note.Open([]byte(raw), verifiers)
		require.NoError(t, err, "%s", raw)
		require.Len(t, n.Sigs, 3, "B's signature and both cosignatures:\n%s", raw)
	}
	cosignedRounds, _ := scrape(t, b, `anchord_witnesslog_cosigns_total{outcome="cosigned"}`)
	t.Logf("%d creates; B's log has %v entries; %d distinct checkpoints served, each with both cosignatures; %v rounds cosigned",
		creates, treeSize, len(served), cosignedRounds)
	anchordtest.Eventually(t, 20*time.Second, 200*time.Millisecond, func() bool {
		size, _ := scrape(t, a, `anchord_logmonitor_verified_size{log="`+origin+`"}`)
		return size == treeSize
	}, "A accepted B's cosigned checkpoint of the whole log")

	// The fork: B's log replaced by another of the same size, under B's key.
	b.stop()
	require.NoError(t, os.RemoveAll(filepath.Join(b.dir, "log")))
	forged := make([][]byte, int(treeSize))
	for i := range forged {
		forged[i] = fmt.Appendf(nil, `{"id":"urn:uuid:forged-%d"}`, i)
	}
	b.appendOffline(keyB, forged...)
	b.args = append(b.args, "--witness-log-witness-fail-open")
	b.start()
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		r1, _ := scrape(t, b, `anchord_witnesslog_witness_requests_total{code="422",witness="`+w1.URL[len("http://"):]+`"}`)
		r2, _ := scrape(t, b, `anchord_witnesslog_witness_requests_total{code="422",witness="`+w2.URL[len("http://"):]+`"}`)
		return r1 >= 1 && r2 >= 1
	}, "both litewitnesses refuse to cosign the fork (422)")
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		n, _ := scrape(t, a, `anchord_logmonitor_reported_total`)
		return n >= 1
	}, "A reports B's fork")

	a.stop()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: a.dir})
	require.NoError(t, err)
	defer st.Close()
	letters, err := st.DeadLetterList(context.Background(), store.DeadLetterListParams{Kind: logmonitor.DeadLetterLogInconsistency, Limit: 10})
	require.NoError(t, err)
	require.Len(t, letters, 1)
	var ev logmonitor.Evidence
	require.NoError(t, json.Unmarshal(letters[0].Payload, &ev))
	older, err := note.Open(ev.Older, verifiers)
	require.NoError(t, err)
	require.Len(t, older.Sigs, 3, "the checkpoint A accepted carries both cosignatures")
	newer, err := note.Open(ev.Newer, note.VerifierList(bv))
	require.NoError(t, err, "the fork is signed by B")
	require.Len(t, newer.Sigs, 1)
	require.True(t, ev.OlderCosigned)
	require.False(t, ev.NewerCosigned, "no witness cosigned the fork")
	require.Equal(t, older.Text[:len(origin)], origin)
	t.Logf("fork reported: %s", ev.Reason)
}

func mustEd25519VKey(t *testing.T, origin string, pub ed25519.PublicKey) string {
	t.Helper()
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	require.NoError(t, err)
	return vkey
}

// readCheckpoint GETs the checkpoint a domain's log serves; false when it serves none yet.
func readCheckpoint(t *testing.T, d *relayDomain) ([]byte, bool) {
	t.Helper()
	resp, err := http.Get("http://" + d.addr + "/log/checkpoint")
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	return raw, true
}

// TestDomainCosignsTheLogOfADomainItFollows: A is a tlog-witness (--tlog-witness) and follows B,
// whose witness policy names A's witness alone. A knows B's log without being told (origin and
// key from B's WebFinger and actor), so B's checkpoints get A's cosignature, as B's log grows;
// each verifies with tessera's cosignature verifier and x/mod's note package.
func TestDomainCosignsTheLogOfADomainItFollows(t *testing.T) {
	t.Parallel()
	keyFileA, keyA := writeKeyFile(t)
	keyFileB, keyB := writeKeyFile(t)
	a := startDomain(t, "A", append(slices.Clone(logTiming), "--tlog-witness", "--key-file", keyFileA)...)
	wkey, err := cosigner.DeriveKey(a.addr+cosigner.Prefix, keyA, true)
	require.NoError(t, err)
	policyFile := filepath.Join(t.TempDir(), "witnesses")
	require.NoError(t, os.WriteFile(policyFile, fmt.Appendf(nil, "witness a %s http://%s%s\nquorum a\n", wkey.VerifierKeys()[0], a.addr, cosigner.Prefix), 0o600))
	b := startDomain(t, "B", "--witness-log", "--key-file", keyFileB, "--witness-log-witnesses", policyFile)
	origin, err := witnesslog.OriginFor("http://" + b.addr)
	require.NoError(t, err)
	_, served := readCheckpoint(t, b)
	require.False(t, served, "nothing is served before A cosigns")

	a.follow(b)
	bv, err := note.NewVerifier(mustEd25519VKey(t, origin, keyB.Public().(ed25519.PublicKey)))
	require.NoError(t, err)
	av, err := fnote.NewVerifierForCosignatureV1(wkey.VerifierKeys()[0])
	require.NoError(t, err)
	cosignedAt := func(size uint64) func() bool {
		return func() bool {
			raw, ok := readCheckpoint(t, b)
			if !ok {
				return false
			}
			n, err := note.Open(raw, note.VerifierList(bv, av))
			if err != nil || len(n.Sigs) != 2 {
				return false
			}
			cp, err := witnesslog.OpenCheckpoint(raw, origin, keyB.Public().(ed25519.PublicKey))
			return err == nil && cp.Size == size
		}
	}
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, cosignedAt(0), "A cosigned B's empty log once it followed B")

	b.stop()
	b.appendOffline(keyB, []byte(`{"id":"urn:uuid:one"}`), []byte(`{"id":"urn:uuid:two"}`))
	b.start()
	anchordtest.Eventually(t, 30*time.Second, 200*time.Millisecond, cosignedAt(2), "A cosigned B's grown log, from the size it had cosigned")
	cosigned, _ := scrape(t, a, "anchord_cosigner_cosigned_total")
	require.GreaterOrEqual(t, cosigned, 2.0)
}
