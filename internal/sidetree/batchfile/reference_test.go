package batchfile

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/cas"
)

// hashlinkRefs is the did:orb ReferenceFunc: a hashlink linking to the file at a domain's /cas.
func hashlinkRefs(uri string, data []byte) string {
	return activity.NewHashlink(data, "http://127.0.0.2/cas/"+uri)
}

// TestBuildHashlinkReferences: with a ReferenceFunc every file names the others by what it
// returns (the did:orb layout), the files are otherwise the reference layout, and the reader
// reads them back through a fetch that resolves hashlinks. Without one, Ref is the CID.
func TestBuildHashlinkReferences(t *testing.T) {
	t.Parallel()
	m := generate(t, 3, 2, 2, 2)
	plain, err := Build(m.interleaved(), cidv0, DefaultLimits())
	require.NoError(t, err)
	for _, f := range plain.List() {
		require.Equal(t, f.URI, f.Ref, "%s: the reference layout names files by CID", f.Kind)
	}

	l := DefaultLimits()
	l.MaxCASURILength = 500
	l.ReferenceFunc = hashlinkRefs
	l.CheckURIFunc = cas.CheckKey
	files, err := Build(m.interleaved(), cidv0, l)
	require.NoError(t, err)
	byHash := map[string][]byte{}
	for _, f := range files.List() {
		require.Equal(t, cidv0(f.Data), f.URI, "files are still stored by CID")
		require.Equal(t, hashlinkRefs(f.URI, f.Data), f.Ref)
		h, err := activity.ParseHashlink(f.Ref)
		require.NoError(t, err)
		require.NoError(t, h.Verify(f.Data))
		require.Equal(t, []string{"http://127.0.0.2/cas/" + f.URI}, h.Links)
		byHash[h.ResourceHash()] = f.Data
	}
	require.Equal(t, files.CoreIndex.URI, files.Anchor.CoreIndexURI, "the anchor string keeps the CID")

	members := func(f *File) map[string]any {
		var v map[string]any
		require.NoError(t, json.Unmarshal(gunzip(t, f.Data), &v))
		return v
	}
	core := members(files.CoreIndex)
	require.Equal(t, files.ProvisionalIndex.Ref, core["provisionalIndexFileUri"])
	require.Equal(t, files.CoreProof.Ref, core["coreProofFileUri"])
	prov := members(files.ProvisionalIndex)
	require.Equal(t, files.ProvisionalProof.Ref, prov["provisionalProofFileUri"])
	require.Equal(t, files.Chunk.Ref, prov["chunks"].([]any)[0].(map[string]any)["chunkFileUri"])
	// Only the references differ from the CID layout.
	for _, pair := range [][2]*File{{plain.Chunk, files.Chunk}, {plain.CoreProof, files.CoreProof}, {plain.ProvisionalProof, files.ProvisionalProof}} {
		require.True(t, bytes.Equal(pair[0].Data, pair[1].Data), "%s names no file and is unchanged", pair[0].Kind)
	}
	swapped := string(gunzip(t, plain.CoreIndex.Data))
	for _, f := range []*File{plain.ProvisionalIndex, plain.CoreProof} {
		ref := map[*File]*File{plain.ProvisionalIndex: files.ProvisionalIndex, plain.CoreProof: files.CoreProof}[f].Ref
		swapped = strings.Replace(swapped, quoted(f.URI), quoted(ref), 1)
	}
	require.Equal(t, swapped, string(gunzip(t, files.CoreIndex.Data)))

	// The reader meets hashlinks and fetches them by their hash.
	fetch := func(uri string, maxSize int) ([]byte, error) {
		if c, err := cas.ParseCID(uri); err == nil {
			for _, f := range files.List() {
				if f.URI == c.String() {
					return f.Data, nil
				}
			}
			return nil, errNotFound
		}
		h, err := activity.ParseHashlink(uri)
		if err != nil {
			return nil, err
		}
		if data, ok := byHash[h.ResourceHash()]; ok {
			return data, nil
		}
		return nil, errNotFound
	}
	b, err := Read(profile, files.Anchor.String(), fetch, l)
	require.NoError(t, err)
	require.NoError(t, b.ProvisionalErr)
	require.Equal(t, files.Operations, b.Operations)

	// A reader that takes only CIDs refuses the files (the sidetree profile's local reader).
	_, err = Read(profile, files.Anchor.String(), fetch, cidLimits())
	require.Error(t, err)

	// A reference longer than the URI limit is refused when it is built, not when it is read.
	short := l
	short.MaxCASURILength = 100
	_, err = Build(m.interleaved(), cidv0, short)
	require.ErrorContains(t, err, "longer than 100")
}
