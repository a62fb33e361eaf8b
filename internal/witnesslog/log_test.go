package witnesslog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

const testOrigin = "a.example:8443/log"

// testTimeout bounds each test's waits; MariaDB checkpoints come once a second.
const testTimeout = 60 * time.Second

type testBundle struct {
	cfg Config
	pub ed25519.PublicKey
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return &testBundle{
		cfg: Config{Origin: testOrigin, Key: key, Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry()},
		pub: pub,
	}
}

// backend opens a fresh log of one kind; the log is closed when the test ends.
type backend struct {
	name string
	open func(t testing.TB, cfg Config) *Log
}

var backends = []backend{
	{name: "posix", open: func(t testing.TB, cfg Config) *Log {
		// The least interval the POSIX storage accepts is 100 ms; short keeps tests short.
		cfg.CheckpointInterval = cmpOrDuration(cfg.CheckpointInterval, 200*time.Millisecond)
		return openPOSIX(t, cfg, filepath.Join(t.TempDir(), "log"))
	}},
	{name: "mariadb", open: func(t testing.TB, cfg Config) *Log {
		return openMariaDB(t, cfg, mariaDBDatabase(t))
	}},
}

func cmpOrDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func openPOSIX(t testing.TB, cfg Config, dir string) *Log {
	t.Helper()
	l, err := OpenPOSIX(context.Background(), cfg, dir)
	require.NoError(t, err)
	t.Cleanup(func() { closeLog(t, l) })
	return l
}

func openMariaDB(t testing.TB, cfg Config, u string) *Log {
	t.Helper()
	l, err := OpenMariaDB(context.Background(), cfg, u)
	require.NoError(t, err)
	t.Cleanup(func() { closeLog(t, l) })
	return l
}

func closeLog(t testing.TB, l *Log) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, l.Close(ctx))
}

// mariaDBDatabase creates a database of its own for the test on the server of
// ANCHORD_TEST_MARIADB_URL, drops it when the test ends, and returns its URL.
func mariaDBDatabase(t testing.TB) string {
	t.Helper()
	server := anchordtest.MariaDBURL(t)
	mcfg, err := mariaDBConfig(server + "mysql")
	require.NoError(t, err)
	mcfg.DBName = ""
	conn, err := mysql.NewConnector(mcfg)
	require.NoError(t, err)
	db := sql.OpenDB(conn)
	defer db.Close()
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "anchord_witnesslog_" + hex.EncodeToString(suffix)
	_, err = db.Exec("CREATE DATABASE `" + name + "`")
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := mysql.NewConnector(mcfg)
		require.NoError(t, err)
		db := sql.OpenDB(conn)
		defer db.Close()
		_, err = db.Exec("DROP DATABASE `" + name + "`")
		require.NoError(t, err)
	})
	return server + name
}

// serve serves l's read API; it returns the log's root URL.
func serve(t testing.TB, l *Log) string {
	t.Helper()
	mux := http.NewServeMux()
	l.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/log/"
}

// appendAll appends entries from workers goroutines and returns the index of each entry.
func appendAll(t testing.TB, l *Log, entries [][]byte, workers int) []uint64 {
	t.Helper()
	ctx := anchordtest.Context(t, testTimeout)
	indices := make([]uint64, len(entries))
	errs := make([]error, len(entries))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				indices[i], errs[i] = l.Append(ctx, entries[i])
			}
		})
	}
	for i := range entries {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "entry %d", i)
	}
	return indices
}

func testEntries(prefix string, n int) [][]byte {
	entries := make([][]byte, n)
	for i := range entries {
		entries[i] = fmt.Appendf(nil, `{"id":"urn:uuid:%s-%d","type":"VerifiableCredential"}`, prefix, i)
	}
	return entries
}

func TestAppendIndicesAreDenseAndUnique(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			l := b.open(t, tb.cfg)
			const n = 100
			indices := appendAll(t, l, testEntries("dense", n), 16)
			seen := map[uint64]bool{}
			for _, i := range indices {
				require.Less(t, i, uint64(n))
				require.False(t, seen[i], "index %d given twice", i)
				seen[i] = true
			}
			cp, err := l.AwaitCheckpoint(anchordtest.Context(t, testTimeout), n-1)
			require.NoError(t, err)
			require.Equal(t, uint64(n), cp.Size)
			require.Equal(t, testOrigin, cp.Origin)

		})
	}
}

func TestAppendRefusesBadEntriesAndAClosedLog(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.cfg.EntryMaxSize = 100
	l := backends[0].open(t, tb.cfg)
	ctx := anchordtest.Context(t, testTimeout)

	_, err := l.Append(ctx, nil)
	require.ErrorIs(t, err, ErrEntrySize)
	_, err = l.Append(ctx, make([]byte, 101))
	require.ErrorIs(t, err, ErrEntrySize)
	i, err := l.Append(ctx, make([]byte, 100))
	require.NoError(t, err, "the limit is inclusive")
	require.Equal(t, uint64(0), i)
	require.Equal(t, float64(0), testutil.ToFloat64(l.m.failures), "refused entries never reach the log")

	closeLog(t, l)
	_, err = l.Append(ctx, []byte("late"))
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, l.Close(ctx), "closing twice is a no-op")
}

func TestAppendReturnsOnItsContext(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// A batch waits a second for company, far longer than the caller does.
	tb.cfg.BatchMaxAge = time.Second
	l := backends[0].open(t, tb.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := l.Append(ctx, []byte("impatient"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The entry is integrated all the same, as documented.
	cp, err := l.AwaitCheckpoint(anchordtest.Context(t, testTimeout), 0)
	require.NoError(t, err)
	require.Equal(t, uint64(1), cp.Size)
}

func TestCloseWaitsForAppendsUnderWay(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.cfg.BatchMaxAge = 300 * time.Millisecond
	tb.cfg.CheckpointInterval = 200 * time.Millisecond
	dir := filepath.Join(t.TempDir(), "log")
	l, err := OpenPOSIX(context.Background(), tb.cfg, dir)
	require.NoError(t, err)
	l.testSignals.queued.Init(t)
	ctx := anchordtest.Context(t, testTimeout)
	type result struct {
		index uint64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		i, err := l.Append(ctx, []byte("under way"))
		done <- result{i, err}
	}()
	l.testSignals.queued.WaitOrTimeout(t, 5*time.Second)
	require.NoError(t, l.Close(ctx))
	res := anchordtest.WaitOrTimeout(t, done, 5*time.Second)
	require.NoError(t, res.err, "Close let the append under way finish")
	require.Equal(t, uint64(0), res.index)

	// Close waited for a checkpoint covering it; a reopened log serves it at once.
	cfg := tb.cfg
	cfg.Registerer = nil
	again := openPOSIX(t, cfg, dir)
	cp, err := again.Checkpoint(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), cp.Size)
}

// BenchmarkAppend measures the log alone: appends/s, one caller at a time (each waits for its
// batch: the latency a witness adds to Accept) and with 16 callers per CPU (batches fill).
func BenchmarkAppend(b *testing.B) {
	entry := testEntries("bench", 1)[0]
	entry = append(entry, make([]byte, 1500-len(entry))...) // about the size of an anchor VC
	for _, be := range backends {
		b.Run(be.name+"/serial", func(b *testing.B) {
			tb := setup(b)
			tb.cfg.Logger = anchordtest.DiscardLogger()
			l := be.open(b, tb.cfg)
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if _, err := l.Append(ctx, entry); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
		b.Run(be.name+"/parallel", func(b *testing.B) {
			tb := setup(b)
			tb.cfg.Logger = anchordtest.DiscardLogger()
			l := be.open(b, tb.cfg)
			ctx := context.Background()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Append(ctx, entry); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
	}
}

// TestOpenPOSIXTightensWhatItFinds: a log directory an earlier version left readable (0755
// directories, 0644 files, as tessera creates them under a default umask) is private once
// opened, and a new one is created 0700. (Files tessera creates later take the daemon's umask;
// cmd/anchord's witness tests check the whole tree of a running domain.)
func TestOpenPOSIXTightensWhatItFinds(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	fresh := filepath.Join(t.TempDir(), "fresh", "log")
	openPOSIX(t, tb.cfg, fresh)
	fi, err := os.Stat(fresh)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	old := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.MkdirAll(filepath.Join(old, "tile", "0"), 0o755))
	require.NoError(t, os.Chmod(old, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(old, "tile", "0", "stray"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(old, "readonly"), []byte("x"), 0o400))
	openPOSIX(t, setup(t).cfg, old)
	for path, want := range map[string]os.FileMode{
		old: 0o700, filepath.Join(old, "tile"): 0o700, filepath.Join(old, "tile", "0"): 0o700,
		filepath.Join(old, "tile", "0", "stray"): 0o600, filepath.Join(old, "readonly"): 0o400,
	} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, want, fi.Mode().Perm(), path)
	}
}
