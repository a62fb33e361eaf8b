package logmonitor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/witnesslog"
)

const testTimeout = 60 * time.Second

// witness is another domain's witness log on disk, served over HTTP at an address that stays
// while the log behind it is replaced.
type witness struct {
	t      *testing.T
	origin string
	pub    ed25519.PublicKey
	cfg    witnesslog.Config
	dir    string
	log    *witnesslog.Log
	mux    atomic.Pointer[http.ServeMux]
	srv    *httptest.Server
}

func newWitness(t *testing.T, host string) *witness {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	w := &witness{t: t, origin: host + "/log", pub: pub, dir: filepath.Join(t.TempDir(), "log")}
	w.cfg = witnesslog.Config{
		Origin: w.origin, Key: key, CheckpointInterval: 200 * time.Millisecond,
		Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry(),
	}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mux.Load().ServeHTTP(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	w.open()
	t.Cleanup(w.close)
	return w
}

func (w *witness) open() {
	w.cfg.Registerer = prometheus.NewRegistry()
	l, err := witnesslog.OpenPOSIX(context.Background(), w.cfg, w.dir)
	require.NoError(w.t, err)
	mux := http.NewServeMux()
	l.Register(mux)
	w.mux.Store(mux)
	w.log = l
}

func (w *witness) close() {
	if w.log == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(w.t, w.log.Close(ctx))
	w.log = nil
}

// append adds n entries and waits until a published checkpoint covers them.
func (w *witness) append(ctx context.Context, prefix string, n int) {
	var last uint64
	for i := range n {
		idx, err := w.log.Append(ctx, fmt.Appendf(nil, `{"id":"urn:uuid:%s-%d"}`, prefix, i))
		require.NoError(w.t, err)
		last = idx
	}
	_, err := w.log.AwaitCheckpoint(ctx, last)
	require.NoError(w.t, err)
}

// rewrite replaces the log on disk with another of n entries, as an operator hiding an entry
// would.
func (w *witness) rewrite(ctx context.Context, n int) {
	w.close()
	require.NoError(w.t, os.RemoveAll(w.dir))
	w.open()
	w.append(ctx, "rewritten", n)
}

func (w *witness) entry() Log {
	fetch, err := witnesslog.HTTPFetch(&http.Client{Timeout: 10 * time.Second}, w.srv.URL+"/log/")
	require.NoError(w.t, err)
	return Log{Domain: w.srv.URL, Origin: w.origin, Key: w.pub, Fetch: fetch}
}

type logList []Log

func (l logList) Logs(context.Context) ([]Log, error) { return l, nil }

func alwaysHeld(context.Context, store.Executor, int64) error { return nil }

type bench struct {
	st  store.Store
	mon *Monitor
	reg *prometheus.Registry
}

func newBench(t *testing.T, backend string, dir Directory, fence FenceFunc) bench {
	t.Helper()
	st := storetest.OpenScratch(t, backend).Store
	reg := prometheus.NewRegistry()
	mon, err := New(Config{Logger: anchordtest.Logger(t), Registerer: reg}, st, dir, fence)
	require.NoError(t, err)
	return bench{st: st, mon: mon, reg: reg}
}

func (b bench) deadLetters(t *testing.T) []store.DeadLetter {
	t.Helper()
	dls, err := b.st.DeadLetterList(context.Background(), store.DeadLetterListParams{Limit: 100})
	require.NoError(t, err)
	return dls
}

var backends = []string{"sqlite", "postgres"}

func TestMonitorFollowsAGrowingLog(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := anchordtest.Context(t, testTimeout)
			w := newWitness(t, "b.example")
			w.append(ctx, "a", 3)
			b := newBench(t, backend, logList{w.entry()}, alwaysHeld)

			steps := []struct {
				grow int
				want Outcome
				size uint64
			}{{0, OutcomeFirst, 3}, {0, OutcomeUnchanged, 3}, {5, OutcomeAdvanced, 8}, {300, OutcomeAdvanced, 308}}
			for i, s := range steps {
				if s.grow > 0 {
					w.append(ctx, fmt.Sprint("step", i), s.grow)
				}
				out, err := b.mon.Check(ctx, w.entry(), 1)
				require.NoError(t, err)
				require.Equal(t, s.want, out, "step %d", i)
				row, err := b.st.LogCheckpointGet(ctx, w.origin)
				require.NoError(t, err)
				require.Equal(t, s.size, row.Size)
				cp, err := witnesslog.OpenCheckpoint(row.Checkpoint, w.origin, w.pub)
				require.NoError(t, err, "the stored checkpoint is the signed note")
				require.Equal(t, s.size, cp.Size)
			}
			require.Empty(t, b.deadLetters(t))
			require.Equal(t, 308.0, testutil.ToFloat64(b.mon.m.size.WithLabelValues(w.origin)))
		})
	}
}

// TestRewrittenLogIsReportedOnceWithBothCheckpoints rewrites a witness's log on disk — longer,
// as long and shorter than the tree the monitor verified — and counts the reports.
func TestRewrittenLogIsReportedOnceWithBothCheckpoints(t *testing.T) {
	t.Parallel()
	for name, size := range map[string]int{"longer": 9, "same size": 6, "shorter": 3} {
		for _, backend := range backends {
			t.Run(name+"/"+backend, func(t *testing.T) {
				t.Parallel()
				ctx := anchordtest.Context(t, testTimeout)
				w := newWitness(t, "b.example")
				w.append(ctx, "original", 6)
				b := newBench(t, backend, logList{w.entry()}, alwaysHeld)
				require.NoError(t, b.mon.RunTask(ctx, 1))
				before, err := b.st.LogCheckpointGet(ctx, w.origin)
				require.NoError(t, err)

				w.rewrite(ctx, size)
				out, err := b.mon.Check(ctx, w.entry(), 1)
				require.NoError(t, err)
				require.Equal(t, OutcomeInconsistent, out)

				dls := b.deadLetters(t)
				require.Len(t, dls, 1)
				require.Equal(t, DeadLetterLogInconsistency, dls[0].Kind)
				require.Equal(t, w.origin, dls[0].Ref)
				var ev Evidence
				require.NoError(t, json.Unmarshal(dls[0].Payload, &ev))
				require.Equal(t, before.Checkpoint, ev.Older, "the evidence keeps the checkpoint verified before")
				older, err := witnesslog.OpenCheckpoint(ev.Older, w.origin, w.pub)
				require.NoError(t, err)
				newer, err := witnesslog.OpenCheckpoint(ev.Newer, w.origin, w.pub)
				require.NoError(t, err, "both checkpoints verify with the domain's key: the log signed both")
				require.Equal(t, uint64(6), older.Size)
				require.Equal(t, uint64(size), newer.Size)

				row, err := b.st.LogCheckpointGet(ctx, w.origin)
				require.NoError(t, err)
				require.Equal(t, before.Checkpoint, row.Checkpoint, "the verified checkpoint stays")

				// The log goes on growing on its new branch: counted, not reported again.
				w.append(ctx, "more", 2)
				out, err = b.mon.Check(ctx, w.entry(), 1)
				require.NoError(t, err)
				require.Equal(t, OutcomeKnownInconsistent, out)
				require.Len(t, b.deadLetters(t), 1)
				require.Equal(t, 2.0, testutil.ToFloat64(b.mon.m.inconsistencies))
				require.Equal(t, 1.0, testutil.ToFloat64(b.mon.m.reported))

				// The operator accepts the log as it is now: retrying forgets the checkpoint.
				require.NoError(t, b.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					if err := RetryDeadLetter(ctx, tx, dls[0]); err != nil {
						return err
					}
					return tx.DeadLetterDelete(ctx, dls[0].ID)
				}))
				out, err = b.mon.Check(ctx, w.entry(), 1)
				require.NoError(t, err)
				require.Equal(t, OutcomeFirst, out)
				row, err = b.st.LogCheckpointGet(ctx, w.origin)
				require.NoError(t, err)
				require.Equal(t, uint64(size+2), row.Size)
			})
		}
	}
}

func TestStaleRunReportsNothing(t *testing.T) {
	t.Parallel()
	ctx := anchordtest.Context(t, testTimeout)
	w := newWitness(t, "b.example")
	w.append(ctx, "original", 4)
	held := atomic.Bool{}
	held.Store(true)
	fence := func(context.Context, store.Executor, int64) error {
		if !held.Load() {
			return store.ErrLeaseLost
		}
		return nil
	}
	b := newBench(t, "sqlite", logList{w.entry()}, fence)
	_, err := b.mon.Check(ctx, w.entry(), 1)
	require.NoError(t, err)

	w.rewrite(ctx, 4)
	held.Store(false)
	_, err = b.mon.Check(ctx, w.entry(), 1)
	require.ErrorIs(t, err, store.ErrLeaseLost)
	require.Empty(t, b.deadLetters(t))
	row, err := b.st.LogCheckpointGet(ctx, w.origin)
	require.NoError(t, err)
	require.Nil(t, row.Rejected, "the run that lost its permit marked nothing")

	held.Store(true)
	out, err := b.mon.Check(ctx, w.entry(), 2)
	require.NoError(t, err)
	require.Equal(t, OutcomeInconsistent, out, "the run that holds the permit reports it")
	require.Len(t, b.deadLetters(t), 1)
}

func TestUnreadableOrForgedLogsDoNotStopTheOthers(t *testing.T) {
	t.Parallel()
	ctx := anchordtest.Context(t, testTimeout)
	good := newWitness(t, "b.example")
	good.append(ctx, "b", 2)
	down := newWitness(t, "c.example")
	downEntry := down.entry()
	down.srv.Close()
	forged := newWitness(t, "d.example")
	forged.append(ctx, "d", 2)
	other, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	forgedEntry := forged.entry()
	forgedEntry.Key = other // the checkpoint is not signed by the key the domain publishes

	b := newBench(t, "sqlite", logList{downEntry, forgedEntry, good.entry()}, alwaysHeld)
	var logs anchordtest.SyncBuffer
	b.mon.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	require.NoError(t, b.mon.RunTask(ctx, 1), "another domain's unreadable log does not fail the run")
	require.Contains(t, logs.String(), "c.example/log", "the unreadable log is warned about")
	require.Contains(t, logs.String(), "d.example/log", "the unverifiable log is warned about")
	_, err = b.st.LogCheckpointGet(ctx, good.origin)
	require.NoError(t, err, "the readable log was checked regardless")
	for _, origin := range []string{down.origin, forged.origin} {
		_, err = b.st.LogCheckpointGet(ctx, origin)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing is stored for %s", origin)
	}
	require.Equal(t, 2.0, testutil.ToFloat64(b.mon.m.checks.WithLabelValues("error")))
	require.Empty(t, b.deadLetters(t), "an unreadable or unverifiable log is not evidence of anything")
}
