package batchfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

func TestReadOutlineAgreesWithRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                                  string
		creates, updates, recovers, deactives int
		kinds                                 []Kind
	}{
		{"every type", 3, 2, 2, 1, []Kind{CoreIndex, CoreProof, ProvisionalIndex, ProvisionalProof, Chunk}},
		{"creates only", 4, 0, 0, 0, []Kind{CoreIndex, ProvisionalIndex, Chunk}},
		{"updates only", 0, 3, 0, 0, []Kind{CoreIndex, ProvisionalIndex, ProvisionalProof, Chunk}},
		{"deactivates only", 0, 0, 0, 2, []Kind{CoreIndex, CoreProof}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tc.creates, tc.updates, tc.recovers, tc.deactives)
			o, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
			require.NoError(t, err)
			require.NoError(t, o.ProvisionalErr)
			require.Equal(t, f.files.Anchor, o.Anchor)

			var kinds []Kind
			for _, ref := range o.Files {
				kinds = append(kinds, ref.Kind)
				require.Equal(t, f.file(ref.Kind).URI, ref.URI, "the URI of the %s", ref.Kind)
			}
			require.Equal(t, tc.kinds, kinds)

			b, err := f.read(cidLimits())
			require.NoError(t, err)
			require.Len(t, o.Operations, len(b.Operations))
			for i, op := range b.Operations {
				require.Equal(t, OutlineOperation{Position: op.Position, Type: op.Type, Suffix: op.Suffix}, o.Operations[i])
			}
		})
	}
}

func TestOutlineFilesOf(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 1, 1, 1)
	o, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
	require.NoError(t, err)
	uris := func(refs []FileRef) []string {
		var out []string
		for _, r := range refs {
			out = append(out, r.URI)
		}
		return out
	}
	ci, cp, pi, pp, ch := f.files.CoreIndex.URI, f.files.CoreProof.URI, f.files.ProvisionalIndex.URI, f.files.ProvisionalProof.URI, f.files.Chunk.URI
	require.Equal(t, []string{ci, ch}, uris(o.FilesOf(sidetree.OperationCreate)))
	require.Equal(t, []string{ci, cp, ch}, uris(o.FilesOf(sidetree.OperationRecover)))
	require.Equal(t, []string{ci, cp}, uris(o.FilesOf(sidetree.OperationDeactivate)))
	require.Equal(t, []string{ci, pi, pp, ch}, uris(o.FilesOf(sidetree.OperationUpdate)))
	require.Empty(t, o.FilesOf("bogus"))
}

func TestReadOutlineErrors(t *testing.T) {
	t.Parallel()

	t.Run("core index problems fail the outline as they fail Read", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 2, 1, 0, 0)
		f.setRaw(CoreIndex, []byte("not gzip"))
		_, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
		require.Equal(t, sidetree.CodeDecompressionFailed, sidetree.CodeOf(err))
		_, readErr := f.read(cidLimits())
		require.Equal(t, sidetree.CodeOf(readErr), sidetree.CodeOf(err))

		_, err = ReadOutline("0.x", f.store.fetch, cidLimits())
		require.Equal(t, sidetree.CodeInvalidAnchorString, sidetree.CodeOf(err))
	})

	t.Run("a missing core index file is a FetchError", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 1, 0, 0, 0)
		delete(f.store.files, f.files.CoreIndex.URI)
		_, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
		var fe *FetchError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, CoreIndex, fe.Kind)
		require.ErrorIs(t, err, errNotFound)
	})

	t.Run("more core operations than the anchor pays for", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 3, 0, 0, 0)
		f.files.Anchor.Count = 2
		_, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
		require.Equal(t, sidetree.CodeOperationCountExceedsLimit, sidetree.CodeOf(err))
	})

	t.Run("a bad provisional index keeps the core operations", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 2, 2, 1, 0)
		f.edit(t, ProvisionalIndex, replaceJSON(t, func(m map[string]any) {
			ops(m)["update"].([]any)[0].(map[string]any)["didSuffix"] = f.m.creates[0].Suffix
		}))
		o, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
		require.NoError(t, err)
		require.Equal(t, sidetree.CodeInvalidProvisionalIndex, sidetree.CodeOf(o.ProvisionalErr))
		require.Len(t, o.Operations, 3, "creates and the recover, no update")
		require.Equal(t, []FileRef{{CoreIndex, f.files.CoreIndex.URI}, {CoreProof, f.files.CoreProof.URI}}, o.Files)
	})

	t.Run("a missing provisional index is a FetchError in ProvisionalErr", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 1, 1, 0, 0)
		boom := errors.New("store down")
		f.store.fail[f.files.ProvisionalIndex.URI] = boom
		o, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
		require.NoError(t, err)
		require.ErrorIs(t, o.ProvisionalErr, boom)
		require.Len(t, o.Operations, 1)
	})

	t.Run("the chunk and proof files are not read", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 1, 1, 1, 0)
		for _, k := range []Kind{CoreProof, ProvisionalProof, Chunk} {
			f.store.fail[f.file(k).URI] = errors.New("must not be fetched")
		}
		o, err := ReadOutline(f.files.Anchor.String(), f.store.fetch, cidLimits())
		require.NoError(t, err)
		require.NoError(t, o.ProvisionalErr)
		require.Len(t, o.Operations, 3)
	})
}

func FuzzReadOutline(f *testing.F) {
	files := seedFiles(f)
	f.Add(gunzip(f, files.CoreIndex.Data), gunzip(f, files.ProvisionalIndex.Data), uint16(8))
	f.Add([]byte(`{}`), []byte(`{}`), uint16(1))
	l := cidLimits()
	// Stored (level 0) gzip with one writer for every input: compressing costs more than the
	// rest of an execution, and the minimizer runs many.
	zw, err := gzip.NewWriterLevel(io.Discard, gzip.NoCompression)
	require.NoError(f, err)
	stored := func(data []byte) []byte {
		var buf bytes.Buffer
		zw.Reset(&buf)
		_, _ = zw.Write(data)
		_ = zw.Close()
		return buf.Bytes()
	}
	f.Fuzz(func(t *testing.T, core, prov []byte, count uint16) {
		s := newStore()
		s.files[files.CoreIndex.URI] = stored(core)
		s.files[files.ProvisionalIndex.URI] = stored(prov)
		anchor := Anchor{Count: int(count), CoreIndexURI: files.CoreIndex.URI}
		o, err := ReadOutline(anchor.String(), s.fetch, l)
		if err != nil {
			requireCoded(t, err)
			return
		}
		require.LessOrEqual(t, len(o.Operations), int(count), "never more operations than the anchor pays for")
		seen := map[string]bool{}
		for i, op := range o.Operations {
			require.Equal(t, i, op.Position)
			require.False(t, seen[op.Suffix], "a DID twice in one batch")
			seen[op.Suffix] = true
		}
		require.Equal(t, CoreIndex, o.Files[0].Kind)
	})
}
