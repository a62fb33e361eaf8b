package witnesslog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

func httpPeer(t testing.TB, root string, pub ed25519.PublicKey) *Peer {
	t.Helper()
	fetch, err := HTTPFetch(&http.Client{Timeout: 10 * time.Second}, root)
	require.NoError(t, err)
	p, err := NewPeer(testOrigin, pub, fetch)
	require.NoError(t, err)
	return p
}

func TestPeerVerifiesInclusionAndConsistency(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			l := b.open(t, tb.cfg)
			ctx := anchordtest.Context(t, testTimeout)
			p := httpPeer(t, serve(t, l), tb.pub)

			first := testEntries("first", 70)
			firstIdx := appendAll(t, l, first, 8)
			_, err := l.AwaitCheckpoint(ctx, 69)
			require.NoError(t, err)
			older, err := p.Checkpoint(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(70), older.Size)

			second := testEntries("second", 230)
			secondIdx := appendAll(t, l, second, 8)
			_, err = l.AwaitCheckpoint(ctx, 299)
			require.NoError(t, err)
			newer, err := p.Checkpoint(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(300), newer.Size)

			require.NoError(t, p.VerifyConsistency(ctx, older, newer))
			require.NoError(t, p.VerifyConsistency(ctx, newer, newer))
			for i, idx := range firstIdx {
				require.NoError(t, p.VerifyInclusion(ctx, older, idx, first[i]))
				require.NoError(t, p.VerifyInclusion(ctx, newer, idx, first[i]))
			}
			for i, idx := range secondIdx {
				require.NoError(t, p.VerifyInclusion(ctx, newer, idx, second[i]))
				require.ErrorIs(t, p.VerifyInclusion(ctx, older, idx, second[i]), ErrNotCovered)
			}
			require.ErrorIs(t, p.VerifyInclusion(ctx, newer, firstIdx[0], []byte("never appended")), ErrNotIncluded)
			require.ErrorIs(t, p.VerifyInclusion(ctx, newer, secondIdx[0], first[0]), ErrNotIncluded, "a real entry at another index")

			// A checkpoint of another log is refused, not compared.
			other := newer
			other.Origin = "b.example/log"
			require.Error(t, p.VerifyConsistency(ctx, older, other))
			require.Error(t, p.VerifyInclusion(ctx, other, 0, first[0]))
		})
	}
}

func TestPeerRefusesCheckpointsItCannotVerify(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	l := backends[0].open(t, tb.cfg)
	root := serve(t, l)
	ctx := anchordtest.Context(t, testTimeout)

	stranger, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, err = httpPeer(t, root, stranger).Checkpoint(ctx)
	require.Error(t, err, "signed by another key")

	fetch, err := HTTPFetch(http.DefaultClient, root)
	require.NoError(t, err)
	elsewhere, err := NewPeer("b.example/log", tb.pub, fetch)
	require.NoError(t, err)
	_, err = elsewhere.Checkpoint(ctx)
	require.Error(t, err, "another origin")

	cp, err := httpPeer(t, root, tb.pub).Checkpoint(ctx)
	require.NoError(t, err)
	_, err = OpenCheckpoint(cp.Raw, testOrigin, stranger)
	require.Error(t, err)
	again, err := OpenCheckpoint(cp.Raw, testOrigin, tb.pub)
	require.NoError(t, err)
	require.Equal(t, cp, again)
}

// TestRewrittenLogIsReportedWithBothCheckpoints removes a POSIX log from disk and writes a
// different one in its place, as an operator hiding an entry would: the consistency check
// against a checkpoint seen before fails, and the error carries both signed checkpoints.
func TestRewrittenLogIsReportedWithBothCheckpoints(t *testing.T) {
	t.Parallel()
	for name, rewritten := range map[string]int{"longer": 9, "same size": 6, "shorter": 3} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			tb.cfg.Registerer = nil
			tb.cfg.CheckpointInterval = 200 * time.Millisecond
			dir := filepath.Join(t.TempDir(), "log")
			ctx := anchordtest.Context(t, testTimeout)

			// The server keeps its address while the log behind it is replaced.
			var current atomic.Pointer[http.ServeMux]
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				current.Load().ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			p := httpPeer(t, srv.URL+"/log/", tb.pub)
			open := func() *Log {
				l, err := OpenPOSIX(ctx, tb.cfg, dir)
				require.NoError(t, err)
				mux := http.NewServeMux()
				l.Register(mux)
				current.Store(mux)
				return l
			}

			l := open()
			original := testEntries("original", 6)
			for _, e := range original {
				_, err := l.Append(ctx, e)
				require.NoError(t, err)
			}
			_, err := l.AwaitCheckpoint(ctx, 5)
			require.NoError(t, err)
			older, err := p.Checkpoint(ctx)
			require.NoError(t, err)
			require.NoError(t, l.Close(ctx))

			require.NoError(t, os.RemoveAll(dir))
			l = open()
			defer closeLog(t, l)
			for i := range rewritten {
				e := fmt.Appendf(nil, "rewritten %d", i)
				_, err := l.Append(ctx, e)
				require.NoError(t, err)
			}
			_, err = l.AwaitCheckpoint(ctx, uint64(rewritten-1))
			require.NoError(t, err)
			newer, err := p.Checkpoint(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(rewritten), newer.Size)

			err = p.VerifyConsistency(ctx, older, newer)
			require.ErrorIs(t, err, ErrInconsistent)
			var evidence *InconsistencyError
			require.ErrorAs(t, err, &evidence)
			require.Equal(t, older.Raw, evidence.Older.Raw)
			require.Equal(t, newer.Raw, evidence.Newer.Raw)
			// The evidence stands on its own: both checkpoints verify with the domain's key.
			for _, raw := range [][]byte{evidence.Older.Raw, evidence.Newer.Raw} {
				_, err := OpenCheckpoint(raw, testOrigin, tb.pub)
				require.NoError(t, err)
			}
			require.Contains(t, err.Error(), fmt.Sprintf("size %d", older.Size))

			require.ErrorIs(t, p.VerifyInclusion(ctx, newer, 0, original[0]), ErrNotIncluded, "the original entry is gone")
		})
	}
}

func TestHTTPFetchIsBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/log/big":
			_, _ = w.Write(make([]byte, 1000))
		case "/log/broken":
			http.Error(w, "no", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ctx := anchordtest.Context(t, testTimeout)
	fetch, err := HTTPFetch(srv.Client(), srv.URL+"/log")
	require.NoError(t, err)

	body, err := fetch(ctx, "big", 1000)
	require.NoError(t, err, "the limit is inclusive")
	require.Len(t, body, 1000)
	_, err = fetch(ctx, "big", 999)
	require.ErrorContains(t, err, "more than 999 bytes")
	_, err = fetch(ctx, "checkpoint", 10)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = fetch(ctx, "broken", 10)
	require.ErrorContains(t, err, "500")

	for _, root := range []string{"", "/log/", "ftp://a.example/log/", "http://"} {
		_, err := HTTPFetch(srv.Client(), root)
		require.Error(t, err, root)
	}
	_, err = HTTPFetch(nil, srv.URL)
	require.Error(t, err)
	_, err = NewPeer(testOrigin, make(ed25519.PublicKey, 32), nil)
	require.Error(t, err)
}

// TestPeerBoundsWhatAHostileLogServes serves oversized and malformed tiles and checkpoints.
func TestPeerBoundsWhatAHostileLogServes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	l := backends[0].open(t, tb.cfg)
	ctx := anchordtest.Context(t, testTimeout)
	for _, e := range testEntries("hostile", 3) {
		_, err := l.Append(ctx, e)
		require.NoError(t, err)
	}
	cp, err := l.AwaitCheckpoint(ctx, 2)
	require.NoError(t, err)

	var requested []int64
	for name, fetch := range map[string]FetchFunc{
		"torn tile": func(_ context.Context, _ string, limit int64) ([]byte, error) {
			requested = append(requested, limit)
			return make([]byte, hashSize+1), nil
		},
		"narrow tile": func(_ context.Context, _ string, limit int64) ([]byte, error) {
			requested = append(requested, limit)
			return make([]byte, hashSize), nil
		},
		"ignores the limit": func(_ context.Context, _ string, limit int64) ([]byte, error) {
			requested = append(requested, limit)
			return make([]byte, limit+1), nil
		},
	} {
		p, err := NewPeer(testOrigin, tb.pub, fetch)
		require.NoError(t, err)
		err = p.VerifyInclusion(ctx, cp, 1, []byte("x"))
		require.Error(t, err, name)
		require.NotErrorIs(t, err, ErrNotIncluded, "%s: unreadable tiles are not a broken promise", name)
		_, err = p.Checkpoint(ctx)
		require.Error(t, err, name)
	}
	for _, limit := range requested {
		require.LessOrEqual(t, limit, int64(CheckpointMaxSize))
	}
}
