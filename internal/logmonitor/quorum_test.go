package logmonitor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cosigner"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/witnesslog"
)

// cosignerWitness is an anchord tlog-witness served over HTTP, which knows one log.
type cosignerWitness struct {
	prefix string
	vkey   string
}

func startCosigner(t *testing.T, name string, logVKey string) cosignerWitness {
	t.Helper()
	_, domain, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	key, err := cosigner.DeriveKey(name, domain, false)
	require.NoError(t, err)
	logs, err := cosigner.NewKnownLogs(cosigner.KnownLogsConfig{Static: []string{logVKey}})
	require.NoError(t, err)
	w, err := cosigner.New(cosigner.Config{Key: key, Logs: logs, Checkpoints: storetest.Open(t, storetest.SQLiteOpener(t))})
	require.NoError(t, err)
	mux := http.NewServeMux()
	w.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return cosignerWitness{prefix: srv.URL + cosigner.Prefix, vkey: key.VerifierKeys()[0]}
}

func (c cosignerWitness) line(name string) string {
	return "witness " + name + " " + c.vkey + " " + c.prefix + "\n"
}

// TestMonitorRequiresTheQuorumAndFindsASplitViewThroughAWitness: domain B's log is cosigned
// by witnesses c1 and c2, which the monitor's policy requires (2 of c1, c2, c3). B also shows
// a forked log, signed with the same key, to witness c3, which cosigns it. The monitor accepts
// B's checkpoint only with the quorum, and finds the fork in c3's view of the log: a dead letter
// holds both checkpoints, each signed by B.
func TestMonitorRequiresTheQuorumAndFindsASplitViewThroughAWitness(t *testing.T) {
	t.Parallel()
	ctx := anchordtest.Context(t, testTimeout)
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	const origin = "b.example/log"
	vkey, err := witnesslog.VerifierKey(origin, pub)
	require.NoError(t, err)
	c1, c2, c3 := startCosigner(t, "c1.example/w", vkey), startCosigner(t, "c2.example/w", vkey), startCosigner(t, "c3.example/w", vkey)

	open := func(dir string, policy string) (*witnesslog.Log, string) {
		l, err := witnesslog.OpenPOSIX(ctx, witnesslog.Config{
			Origin: origin, Key: key, CheckpointInterval: 200 * time.Millisecond, Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry(),
			Witnessing: &witnesslog.WitnessingConfig{Policy: []byte(policy), Client: cosigner.EndpointClient(10 * time.Second)},
		}, dir)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, l.Close(context.Background())) })
		mux := http.NewServeMux()
		l.Register(mux)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return l, srv.URL + "/log/"
	}
	grow := func(l *witnesslog.Log, prefix string, n int) {
		var last uint64
		for i := range n {
			idx, err := l.Append(ctx, []byte(prefix+string(rune('a'+i))))
			require.NoError(t, err)
			last = idx
		}
		anchordtest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
			res, err := l.Cosign(ctx)
			return err == nil && res.Size > last
		})
	}

	// The log the monitor reads, cosigned by c1 and c2.
	honest, honestURL := open(filepath.Join(t.TempDir(), "honest"), c1.line("c1")+c2.line("c2")+"group both 2 c1 c2\nquorum both\n")
	grow(honest, "honest", 8)

	policy, err := witnesslog.ParseWitnesses([]byte(c1.line("c1") + c2.line("c2") + c3.line("c3") + "group two 2 c1 c2 c3\nquorum two\n"))
	require.NoError(t, err)
	b := newBench(t, "sqlite", logList{}, alwaysHeld)
	mon, err := New(Config{
		WitnessPrefixes: policy.Prefixes, Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry(),
		WitnessFetch: func(prefix string) witnesslog.FetchFunc {
			f, err := witnesslog.HTTPFetch(&http.Client{Timeout: 10 * time.Second}, prefix)
			require.NoError(t, err)
			return f
		},
	}, b.st, logList{}, alwaysHeld)
	require.NoError(t, err)
	fetch, err := witnesslog.HTTPFetch(&http.Client{Timeout: 10 * time.Second}, honestURL)
	require.NoError(t, err)
	entry := Log{Domain: "https://b.example", Origin: origin, Key: pub, Fetch: fetch, Quorum: policy.Quorum}

	// A policy the checkpoint cannot satisfy: not accepted, nothing stored.
	strict, err := witnesslog.ParseWitnesses([]byte(c3.line("c3") + "quorum c3\n"))
	require.NoError(t, err)
	strictEntry := entry
	strictEntry.Quorum = strict.Quorum
	out, err := mon.Check(ctx, strictEntry, 1)
	require.NoError(t, err)
	require.Equal(t, OutcomeNotCosigned, out)
	_, err = b.st.LogCheckpointGet(ctx, origin)
	require.Error(t, err)

	out, err = mon.Check(ctx, entry, 1)
	require.NoError(t, err)
	require.Equal(t, OutcomeFirst, out, "cosigned by c1 and c2: accepted")
	require.Empty(t, b.deadLetters(t))

	// The other side of the split view: a log of 5 other entries under the same key, shown to
	// c3 only.
	forked, _ := open(filepath.Join(t.TempDir(), "forked"), c3.line("c3")+"quorum c3\n")
	grow(forked, "forked", 5)

	out, err = mon.Check(ctx, entry, 1)
	require.NoError(t, err)
	require.Equal(t, OutcomeInconsistent, out, "c3's view contradicts the accepted checkpoint")
	dls := b.deadLetters(t)
	require.Len(t, dls, 1)
	var ev Evidence
	require.NoError(t, json.Unmarshal(dls[0].Payload, &ev))
	require.Equal(t, c3.prefix, ev.Witness)
	lv, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	for _, raw := range [][]byte{ev.Older, ev.Newer} {
		_, err := note.Open(raw, note.VerifierList(lv))
		require.NoError(t, err, "both checkpoints are signed by the domain")
	}
	older, err := witnesslog.OpenCheckpoint(ev.Older, origin, pub)
	require.NoError(t, err)
	newer, err := witnesslog.OpenCheckpoint(ev.Newer, origin, pub)
	require.NoError(t, err)
	require.Equal(t, uint64(5), older.Size, "c3's checkpoint")
	require.Equal(t, uint64(8), newer.Size, "the one the monitor accepted")
	require.True(t, ev.NewerCosigned)
	require.False(t, ev.OlderCosigned, "c3 alone is not the quorum")

	out, err = mon.Check(ctx, entry, 1)
	require.NoError(t, err)
	require.Equal(t, OutcomeKnownInconsistent, out, "reported once")
}
