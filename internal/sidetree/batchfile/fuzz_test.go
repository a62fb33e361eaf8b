package batchfile

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// Seeds for the file fuzzers: the decompressed files of a small valid batch of every type.
func seedFiles(f *testing.F) *Files {
	f.Helper()
	m := generate(f, 2, 2, 2, 2)
	files, err := Build(m.interleaved(), cidv0, DefaultLimits())
	require.NoError(f, err)
	return files
}

func requireCoded(t *testing.T, err error) {
	t.Helper()
	require.NotEmpty(t, sidetree.CodeOf(err), "error without a code: %v", err)
}

func FuzzParseCoreIndexFile(f *testing.F) {
	f.Add(gunzip(f, seedFiles(f).CoreIndex.Data))
	f.Add([]byte(`{}`))
	l := cidLimits()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseCoreIndexFile(data, l)
		if err != nil {
			requireCoded(t, err)
			return
		}
		seen := map[string]bool{}
		for _, s := range c.suffixes() {
			require.False(t, seen[s], "duplicate suffix accepted")
			seen[s] = true
		}
		require.Equal(t, len(c.recovers)+len(c.deactivates) > 0, c.coreProofURI != "")
	})
}

func FuzzParseCoreProofFile(f *testing.F) {
	files := seedFiles(f)
	f.Add(gunzip(f, files.CoreProof.Data), "")
	f.Add([]byte(`{"operations":{}}`), "x")
	f.Fuzz(func(t *testing.T, data []byte, suffix string) {
		p, err := parseCoreProofFile(data, profile, []string{suffix, suffix})
		if err != nil {
			requireCoded(t, err)
			return
		}
		require.NotZero(t, len(p.recovers)+len(p.deactivates))
	})
}

func FuzzParseProvisionalIndexFile(f *testing.F) {
	f.Add(gunzip(f, seedFiles(f).ProvisionalIndex.Data))
	f.Add([]byte(`{"chunks":[{"chunkFileUri":"x"}]}`))
	l := DefaultLimits()
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProvisionalIndexFile(data, l)
		if err != nil {
			requireCoded(t, err)
			return
		}
		require.NotEmpty(t, p.chunkURI)
		require.Equal(t, len(p.updates) > 0, p.proofURI != "")
	})
}

func FuzzParseProvisionalProofFile(f *testing.F) {
	f.Add(gunzip(f, seedFiles(f).ProvisionalProof.Data))
	f.Add([]byte(`{"operations":{"update":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		proofs, err := parseProvisionalProofFile(data, profile)
		if err != nil {
			requireCoded(t, err)
			return
		}
		require.NotEmpty(t, proofs)
	})
}

func FuzzParseChunkFile(f *testing.F) {
	f.Add(gunzip(f, seedFiles(f).Chunk.Data))
	f.Add([]byte(`{"deltas":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		deltas, err := parseChunkFile(data, profile)
		if err != nil {
			requireCoded(t, err)
			return
		}
		for _, d := range deltas {
			require.LessOrEqual(t, len(d), 3*sidetree.MaxDeltaSizeDefault)
		}
	})
}

// FuzzRead feeds arbitrary bytes as the compressed core index file of an anchor.
func FuzzRead(f *testing.F) {
	files := seedFiles(f)
	f.Add(files.CoreIndex.Data)
	f.Add(gz(f, []byte(`{}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newStore()
		s.put(files)
		s.files[files.CoreIndex.URI] = data
		b, err := Read(profile, files.Anchor.String(), s.fetch, DefaultLimits())
		if err != nil {
			var fe *FetchError
			if !errors.As(err, &fe) { // a fuzzed file may name URIs the store does not have
				requireCoded(t, err)
			}
			return
		}
		require.LessOrEqual(t, len(b.Operations), b.Anchor.Count)
		for i, op := range b.Operations {
			require.Equal(t, i, op.Position)
		}
	})
}

// FuzzDecompress: arbitrary input never yields more than the bound.
func FuzzDecompress(f *testing.F) {
	f.Add(gz(f, []byte(`{"deltas":[]}`)), 5)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		out, err := decompress(data, max)
		if err == nil {
			require.LessOrEqual(t, len(out), max)
		}
	})
}
