package witnesslog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
)

// fuzzLog is a POSIX log of five entries, opened once per fuzz target.
func fuzzLog(f *testing.F) (*Log, ed25519.PublicKey, Checkpoint) {
	f.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	cfg := Config{Origin: testOrigin, Key: key, Logger: anchordtest.DiscardLogger(), Registerer: prometheus.NewRegistry()}
	l, err := OpenPOSIX(context.Background(), cfg, filepath.Join(f.TempDir(), "log"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil {
			f.Error(err)
		}
	})
	for _, e := range testEntries("fuzz", 5) {
		if _, err := l.Append(context.Background(), e); err != nil {
			f.Fatal(err)
		}
	}
	cp, err := l.AwaitCheckpoint(context.Background(), 4)
	if err != nil {
		f.Fatal(err)
	}
	return l, key.Public().(ed25519.PublicKey), cp
}

func FuzzOpenCheckpoint(f *testing.F) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	s, err := newSigner(testOrigin, key)
	if err != nil {
		f.Fatal(err)
	}
	for _, text := range []string{
		testOrigin + "\n5\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
		testOrigin + "\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
		testOrigin + "\n18446744073709551615\nAAAA\n",
		testOrigin + "\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nextension line\n",
	} {
		signed, err := note.Sign(&note.Note{Text: text}, s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(signed)
		f.Add(signed[:len(signed)/2])
	}
	f.Add([]byte("\n\n\n\n— a.example:8443/log AAAA\n"))
	pub := key.Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, raw []byte) {
		cp, err := OpenCheckpoint(raw, testOrigin, pub)
		if err != nil {
			return
		}
		if cp.Origin != testOrigin || len(cp.Hash) != hashSize || !bytes.Equal(cp.Raw, raw) {
			t.Fatalf("accepted a checkpoint that does not hold together: %+v", cp)
		}
	})
}

// FuzzServe requests arbitrary paths below /log/: the answer is a status, never a panic, and a
// tile served is whole hashes.
func FuzzServe(f *testing.F) {
	l, _, _ := fuzzLog(f)
	mux := http.NewServeMux()
	l.Register(mux)
	for _, p := range []string{"checkpoint", "tile/0/000.p/5", "tile/entries/000.p/3", "tile/0/x001/000",
		"tile/0/000.p/", "tile/entries/.p/1", "tile/1/000.p/1", "tile/0/x.p/1", "tile//000"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, path string) {
		req, err := http.NewRequest(http.MethodGet, "http://a.example/log/"+path, nil)
		if err != nil {
			return
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
			if strings.HasPrefix(req.URL.Path, "/log/tile/") && !strings.HasPrefix(req.URL.Path, "/log/tile/entries/") && w.Body.Len()%hashSize != 0 {
				t.Fatalf("%s: a tile of %d bytes", path, w.Body.Len())
			}
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			t.Fatalf("%s: status %d", path, w.Code)
		}
	})
}

// FuzzPeerTiles has a hostile log serve arbitrary tiles under a genuine checkpoint: Peer
// neither panics nor proves an entry the log never held.
func FuzzPeerTiles(f *testing.F) {
	l, pub, cp := fuzzLog(f)
	tile, err := l.readTile(context.Background(), 0, 0, 5)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tile, uint8(1))
	f.Add(tile[:3*hashSize], uint8(4))
	f.Add(append(tile, 0), uint8(0))
	f.Add([]byte{}, uint8(9))
	f.Fuzz(func(t *testing.T, served []byte, index uint8) {
		fetch := func(_ context.Context, path string, limit int64) ([]byte, error) {
			if int64(len(served)) > limit {
				return served[:limit], nil
			}
			return served, nil
		}
		p, err := NewPeer(testOrigin, pub, fetch)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.VerifyInclusion(context.Background(), cp, uint64(index), []byte("never appended")); err == nil {
			t.Fatalf("proved an entry the log never held at %d", index)
		}
		older := cp
		older.Size, older.Hash = 3, bytes.Repeat([]byte{1}, hashSize)
		if err := p.VerifyConsistency(context.Background(), older, cp); err == nil {
			t.Fatal("proved a made-up older tree consistent")
		}
	})
}
