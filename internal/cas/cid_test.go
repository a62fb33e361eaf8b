package cas

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"

	chunker "github.com/ipfs/boxo/chunker"
	"github.com/ipfs/boxo/ipld/merkledag"
	mdtest "github.com/ipfs/boxo/ipld/merkledag/test"
	"github.com/ipfs/boxo/ipld/unixfs/importer/balanced"
	"github.com/ipfs/boxo/ipld/unixfs/importer/helpers"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
)

// testData returns n deterministic, incompressible bytes (SHA-256 in counter mode).
func testData(n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	var ctr [8]byte
	for i := uint64(0); len(out) < n; i++ {
		binary.BigEndian.PutUint64(ctr[:], i)
		sum := sha256.Sum256(ctr[:])
		out = append(out, sum[:]...)
	}
	return out[:n]
}

// boxoCID imports data with boxo's balanced layout and default chunker, as `ipfs add` does.
func boxoCID(t *testing.T, data []byte, v CIDVersion) string {
	t.Helper()
	prefix := merkledag.V0CidPrefix()
	if v == CIDv1 {
		prefix = merkledag.V1CidPrefix()
	}
	params := helpers.DagBuilderParams{
		Dagserv:    mdtest.Mock(),
		Maxlinks:   helpers.DefaultLinksPerBlock,
		CidBuilder: prefix,
		RawLeaves:  false,
	}
	db, err := params.New(chunker.DefaultSplitter(bytes.NewReader(data)))
	require.NoError(t, err)
	root, err := balanced.Layout(db)
	require.NoError(t, err)
	return root.Cid().String()
}

func TestComputeCIDKnownVectors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"hello world", []byte("hello world\n"), "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"},
		{"empty", nil, "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, ComputeCID(tc.data, CIDv0))
			require.Equal(t, tc.want, AddressFunc(CIDv0)(tc.data))
			// A single-block v1 CID names the same block: same digest, other encoding.
			c, err := ParseCID(tc.want)
			require.NoError(t, err)
			c.Version = CIDv1
			require.Equal(t, c.String(), ComputeCID(tc.data, CIDv1))
		})
	}
}

// TestComputeCIDMatchesBoxo checks the hand-written importer against boxo's at the chunk and
// link-count boundaries, for both versions.
func TestComputeCIDMatchesBoxo(t *testing.T) {
	t.Parallel()
	sizes := map[string]int{
		"0":                0,
		"1":                1,
		"256KiB-1":         chunkSize - 1,
		"256KiB":           chunkSize,
		"256KiB+1":         chunkSize + 1,
		"2x256KiB":         2 * chunkSize,
		"10MB":             10_000_000,
		"174 chunks":       maxLinks * chunkSize,
		"174 chunks + 1 B": maxLinks*chunkSize + 1,
	}
	if testing.Short() {
		delete(sizes, "174 chunks")
		delete(sizes, "174 chunks + 1 B")
	}
	for name, size := range sizes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data := testData(size)
			for _, v := range []CIDVersion{CIDv0, CIDv1} {
				require.Equal(t, boxoCID(t, data, v), ComputeCID(data, v), "size %d version %d", size, v)
			}
		})
	}
}

func TestParseCID(t *testing.T) {
	t.Parallel()
	hello := []byte("hello world\n")
	v1 := ComputeCID(hello, CIDv1)
	raw := CID{Version: CIDv1, Codec: codecRaw, Digest: sha256.Sum256(hello)}.String()
	for _, tc := range []struct {
		name    string
		in      string
		version CIDVersion
		codec   uint64
		ok      bool
	}{
		{"v0", "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o", CIDv0, codecDagPB, true},
		{"v1 dag-pb", v1, CIDv1, codecDagPB, true},
		{"v1 raw", raw, CIDv1, codecRaw, true},
		{"empty", "", 0, 0, false},
		{"v0 bad char", "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5O", 0, 0, false},
		{"v0 0 char", "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff50", 0, 0, false},
		{"v0 short", "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5", 0, 0, false},
		{"v0 long", "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5oo", 0, 0, false},
		{"v1 upper case", strings.ToUpper(v1), 0, 0, false},
		{"v1 upper body", "b" + strings.ToUpper(v1[1:]), 0, 0, false},
		{"v1 truncated", v1[:len(v1)-1], 0, 0, false},
		{"v1 padded", v1 + "=", 0, 0, false},
		{"sidetree mock CAS", "EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg", 0, 0, false},
		{"v1 sha1", "b" + base32Lower.EncodeToString(append([]byte{1, 0x70, 0x11, 20}, make([]byte, 20)...)), 0, 0, false},
		{"v1 dag-cbor", "b" + base32Lower.EncodeToString(append([]byte{1, 0x71, 0x12, 32}, make([]byte, 32)...)), 0, 0, false},
		{"v2", "b" + base32Lower.EncodeToString(append([]byte{2, 0x70, 0x12, 32}, make([]byte, 32)...)), 0, 0, false},
		{"too long", "b" + strings.Repeat("a", 100), 0, 0, false},
		{"other multibase", "z" + base58Encode(append([]byte{1, 0x70, 0x12, 32}, make([]byte, 32)...)), 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCID(tc.in)
			if !tc.ok {
				require.ErrorIs(t, err, ErrInvalidCID)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.version, c.Version)
			require.Equal(t, tc.codec, c.Codec)
			require.Equal(t, tc.in, c.String())
		})
	}
}

func TestBase58RoundTrip(t *testing.T) {
	t.Parallel()
	for _, b := range [][]byte{{}, {0}, {0, 0, 1}, {0xff}, testData(34), append([]byte{0, 0}, testData(40)...)} {
		s := base58Encode(b)
		got, err := base58Decode(s)
		require.NoError(t, err)
		require.Equal(t, len(b), len(got))
		require.True(t, bytes.Equal(b, got) || len(b) == 0)
	}
}

func FuzzParseCID(f *testing.F) {
	f.Add("QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o")
	f.Add(ComputeCID([]byte("x"), CIDv1))
	f.Add("bafy")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCID(s)
		if err != nil {
			return
		}
		// Whatever parses is canonical: it prints back to the same string.
		require.Equal(t, s, c.String())
	})
}

func BenchmarkComputeCID(b *testing.B) {
	data := testData(3_000_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ComputeCID(data, CIDv0)
	}
}

// FuzzCheckKey: a CAS key is accepted exactly when it is a CID or a sha2-256 hashlink or resource
// hash, and an accepted hash key names the same digest in each of its forms.
func FuzzCheckKey(f *testing.F) {
	data := []byte("a batch file")
	for _, seed := range []string{
		ComputeCID(data, CIDv0), ComputeCID(data, CIDv1), activity.NewHashlink(data),
		activity.NewHashlink(data, "https://a.example/cas/x"), "uEiB", "hl:", "hl:uEiB:u", "", "Qm",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := CheckKey(key)
		_, cidErr := ParseCID(key)
		h, hashErr := parseHashKey(key)
		if (err == nil) != (cidErr == nil || hashErr == nil) {
			t.Fatalf("CheckKey(%q) = %v, ParseCID: %v, hash: %v", key, err, cidErr, hashErr)
		}
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidCID)
			return
		}
		if hashErr == nil {
			for _, form := range []string{h.ResourceHash(), h.Anchor(), h.String()} {
				again, err := parseHashKey(form)
				require.NoError(t, err, form)
				require.Equal(t, h.Digest, again.Digest, form)
			}
		}
	})
}
