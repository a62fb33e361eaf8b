package witnesslog

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/transparency-dev/tessera/api/layout"

	"github.com/anchord/anchord/internal/httpapi"
)

// hashSize is the size of one node hash in a tile.
const hashSize = sha256.Size

// Cache-Control of the read API: a checkpoint changes, a tile or bundle of a given width never
// does (in a log that keeps its word).
const (
	cacheCheckpoint = "no-cache"
	cacheImmutable  = "public, max-age=31536000, immutable"
)

// Router is where Register puts the routes; httpapi.Router and *http.ServeMux are both one.
type Router interface {
	Handle(pattern string, handler http.Handler)
}

// Register serves the log's tlog-tiles read API under /log/: /log/checkpoint,
// /log/tile/<L>/<N>[.p/<W>] and /log/tile/entries/<N>[.p/<W>].
//
// A partial tile or bundle is served with exactly the width its path names, even where the
// storage holds a wider one (the MariaDB backend keeps one growing row per tile), as the
// tlog-tiles specification requires.
func (l *Log) Register(r Router) {
	r.Handle("GET /log/checkpoint", http.HandlerFunc(l.serveCheckpoint))
	r.Handle("GET /log/tile/entries/{n...}", http.HandlerFunc(l.serveEntryBundle))
	r.Handle("GET /log/tile/{level}/{n...}", http.HandlerFunc(l.serveTile))
}

func (l *Log) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	raw, err := l.servedCheckpoint(r.Context())
	if err != nil {
		l.fail(w, r, "checkpoint", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", cacheCheckpoint)
	_, _ = w.Write(raw)
}

func (l *Log) serveTile(w http.ResponseWriter, r *http.Request) {
	level, index, width, err := layout.ParseTileLevelIndexPartial(r.PathValue("level"), r.PathValue("n"))
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_path", "not a tile path of tlog-tiles")
		return
	}
	tile, err := l.readTile(r.Context(), level, index, width)
	if err != nil {
		l.fail(w, r, "tile", err)
		return
	}
	serveImmutable(w, tile)
}

func (l *Log) serveEntryBundle(w http.ResponseWriter, r *http.Request) {
	index, width, err := layout.ParseTileIndexPartial(r.PathValue("n"))
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_path", "not an entry bundle path of tlog-tiles")
		return
	}
	bundle, err := l.readEntryBundle(r.Context(), index, width)
	if err != nil {
		l.fail(w, r, "entry bundle", err)
		return
	}
	serveImmutable(w, bundle)
}

// readTile returns the tile with exactly width hashes (layout.TileWidth for width 0).
func (l *Log) readTile(ctx context.Context, level, index uint64, width uint8) ([]byte, error) {
	tile, err := l.reader.ReadTile(ctx, level, index, width)
	if err != nil {
		return nil, err
	}
	want := tileWidth(width) * hashSize
	if len(tile) < want || len(tile)%hashSize != 0 {
		// A tile narrower than asked for does not exist yet; a torn one is not served.
		return nil, fmt.Errorf("tile %d/%d holds %d bytes, want %d: %w", level, index, len(tile), want, os.ErrNotExist)
	}
	return tile[:want], nil
}

// readEntryBundle returns the bundle with exactly width entries (layout.EntryBundleWidth for
// width 0).
func (l *Log) readEntryBundle(ctx context.Context, index uint64, width uint8) ([]byte, error) {
	bundle, err := l.reader.ReadEntryBundle(ctx, index, width)
	if err != nil {
		return nil, err
	}
	want := bundleWidth(width)
	end, n := bundlePrefix(bundle, want)
	if n < want {
		return nil, fmt.Errorf("entry bundle %d holds %d entries, want %d: %w", index, n, want, os.ErrNotExist)
	}
	return bundle[:end], nil
}

// bundlePrefix walks the length-prefixed entries of bundle and returns the byte length and
// number of its first (at most) want entries; it stops at a truncated entry.
func bundlePrefix(bundle []byte, want int) (end, n int) {
	for n < want && end+2 <= len(bundle) {
		next := end + 2 + int(binary.BigEndian.Uint16(bundle[end:]))
		if next > len(bundle) {
			break
		}
		end = next
		n++
	}
	return end, n
}

func tileWidth(width uint8) int {
	if width == 0 {
		return layout.TileWidth
	}
	return int(width)
}

func bundleWidth(width uint8) int {
	if width == 0 {
		return layout.EntryBundleWidth
	}
	return int(width)
}

func serveImmutable(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", cacheImmutable)
	_, _ = w.Write(body)
}

// fail answers a read that did not succeed, as every other route answers: {code, message}, the
// storage's error in the log only. A storage that fails is answered 503, to be retried.
func (l *Log) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, os.ErrNotExist) {
		httpapi.WriteError(w, http.StatusNotFound, "not_found", "the log holds no such "+what)
		return
	}
	l.logger.WarnContext(r.Context(), "witness log: read "+what, "path", r.URL.Path, "error", err)
	w.Header().Set("Retry-After", "1")
	httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "the log could not be read; try again later")
}
