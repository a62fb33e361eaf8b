package witnesslog

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpapi"
)

// TestTesseraClientVerifiesTheServedLog is the interoperability check: tessera's own tlog-tiles
// client, over HTTP, reads the checkpoint, verifies it with the domain's public key, proves
// the inclusion of every entry and reads every entry back from the bundles.
func TestTesseraClientVerifiesTheServedLog(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			l := b.open(t, tb.cfg)
			ctx := anchordtest.Context(t, testTimeout)
			// 300 entries: one full bundle and tile, then partial ones.
			const n = 300
			entries := testEntries("served", n)
			indices := appendAll(t, l, entries, 32)
			_, err := l.AwaitCheckpoint(ctx, n-1)
			require.NoError(t, err)

			root, err := url.Parse(serve(t, l))
			require.NoError(t, err)
			f, err := client.NewHTTPFetcher(root, nil)
			require.NoError(t, err)
			vkey, err := VerifierKey(testOrigin, tb.pub)
			require.NoError(t, err)
			v, err := note.NewVerifier(vkey)
			require.NoError(t, err)
			cp, _, _, err := client.FetchCheckpoint(ctx, f.ReadCheckpoint, v, testOrigin)
			require.NoError(t, err)
			require.Equal(t, uint64(n), cp.Size)

			pb, err := client.NewProofBuilder(ctx, cp.Size, f.ReadTile)
			require.NoError(t, err)
			byIndex := make([][]byte, n)
			for i, idx := range indices {
				byIndex[idx] = entries[i]
				prf, err := pb.InclusionProof(ctx, idx)
				require.NoError(t, err)
				require.NoError(t, proof.VerifyInclusion(rfc6962.DefaultHasher, idx, cp.Size,
					rfc6962.DefaultHasher.HashLeaf(entries[i]), prf, cp.Hash), "entry %d at %d", i, idx)
			}
			var read [][]byte
			for bundle := uint64(0); bundle*layout.EntryBundleWidth < n; bundle++ {
				eb, err := client.GetEntryBundle(ctx, f.ReadEntryBundle, bundle, cp.Size)
				require.NoError(t, err)
				read = append(read, eb.Entries...)
			}
			require.Equal(t, byIndex, read)
		})
	}
}

func TestHandlerServesExactWidthsAndRefusesBadPaths(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			l := b.open(t, tb.cfg)
			entries := testEntries("width", 5)
			for _, e := range entries {
				_, err := l.Append(anchordtest.Context(t, testTimeout), e)
				require.NoError(t, err)
			}
			_, err := l.AwaitCheckpoint(anchordtest.Context(t, testTimeout), 4)
			require.NoError(t, err)
			root := serve(t, l)
			get := func(path string) (int, http.Header, []byte) {
				resp, err := http.Get(root + path)
				require.NoError(t, err)
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				return resp.StatusCode, resp.Header, body
			}

			code, h, body := get("checkpoint")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, "no-cache", h.Get("Cache-Control"))
			require.True(t, strings.HasPrefix(string(body), testOrigin+"\n5\n"), string(body))

			code, h, body = get("tile/0/000.p/3")
			require.Equal(t, http.StatusOK, code)
			require.Len(t, body, 3*hashSize, "a partial tile has the width its path names")
			require.Contains(t, h.Get("Cache-Control"), "immutable")
			require.Equal(t, rfc6962.DefaultHasher.HashLeaf(entries[0]), body[:hashSize])
			code, _, body = get("tile/0/000.p/5")
			require.Equal(t, http.StatusOK, code)
			require.Len(t, body, 5*hashSize)

			code, _, body = get("tile/entries/000.p/2")
			require.Equal(t, http.StatusOK, code)
			end, count := bundlePrefix(body, 10)
			require.Equal(t, 2, count)
			require.Len(t, body, end)

			for path, want := range map[string]int{
				"tile/0/000.p/6":         http.StatusNotFound, // wider than the tree
				"tile/0/000":             http.StatusNotFound, // not full yet
				"tile/0/001.p/1":         http.StatusNotFound,
				"tile/1/000.p/1":         http.StatusNotFound,
				"tile/entries/000.p/6":   http.StatusNotFound,
				"tile/entries/000":       http.StatusNotFound,
				"tile/entries/x001/000":  http.StatusNotFound,
				"tile/0/0":               http.StatusBadRequest,
				"tile/64/000":            http.StatusBadRequest,
				"tile/0/000.p/256":       http.StatusBadRequest,
				"tile/0/000.p/0":         http.StatusBadRequest,
				"tile/zero/000":          http.StatusBadRequest,
				"tile/entries/abc":       http.StatusBadRequest,
				"tile/entries/000.p/x":   http.StatusBadRequest,
				"tile/0/x000/x000/000.p": http.StatusBadRequest,
			} {
				code, h, body := get(path)
				require.Equal(t, want, code, path)
				require.Equal(t, "application/json", h.Get("Content-Type"), path)
				var eb httpapi.ErrorBody
				require.NoError(t, json.Unmarshal(body, &eb), path)
				require.NotEmpty(t, eb.Code, path)
				require.NotContains(t, eb.Message, "000", "%s: the path is not repeated", path)
			}
		})
	}
}

func TestHandlerAnswersNotFoundBeforeTheFirstCheckpoint(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	l := backends[0].open(t, tb.cfg)
	// The POSIX storage publishes the empty tree's checkpoint when it creates the log.
	cp, err := l.Checkpoint(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(0), cp.Size)
	resp, err := http.Get(serve(t, l) + "tile/entries/000.p/1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
