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

// TestBuildOrbBatchFiles: with a ReferenceFunc every file names the others by what it
// returns, and with OrbProofs the proof files hold bare JWS strings (together, Orb's layout);
// the files are otherwise the reference layout, and the reader reads them back through a fetch
// that resolves hashlinks. Without them, Ref is the CID and proofs are {"signedData"} objects.
func TestBuildOrbBatchFiles(t *testing.T) {
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
	l.OrbProofs = true
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
	// Orb's proof files: arrays of the signedData strings, in the same order.
	require.Equal(t, `{"operations":{"update":[`+quoted(m.updates[0].SignedData)+`,`+quoted(m.updates[1].SignedData)+`]}}`, string(gunzip(t, files.ProvisionalProof.Data)))
	coreProof := members(files.CoreProof)["operations"].(map[string]any)
	require.Len(t, coreProof["recover"], 2)
	require.Equal(t, m.deactivates[0].SignedData, coreProof["deactivate"].([]any)[0])
	onlyDeactivates, err := Build(m.deactivates, cidv0, l)
	require.NoError(t, err)
	require.NotContains(t, string(gunzip(t, onlyDeactivates.CoreProof.Data)), "recover", "Orb leaves an empty array out")
	// The chunk names no file and is unchanged; the core index differs by its references only.
	require.True(t, bytes.Equal(plain.Chunk.Data, files.Chunk.Data))
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
	orb := profile
	orb.OrbBatchFiles = true
	b, err := Read(orb, files.Anchor.String(), fetch, l)
	require.NoError(t, err)
	require.NoError(t, b.ProvisionalErr)
	require.Equal(t, unparsed(files.Operations), b.Operations)

	// Each profile's reader takes its own proof layout only, as the reference implementation
	// and Orb do: a batch in the other one is invalid (its core proofs) or loses its updates.
	_, err = Read(profile, files.Anchor.String(), fetch, l)
	require.ErrorContains(t, err, "must be an object")
	store := newStore()
	store.put(plain)
	_, err = Read(orb, plain.Anchor.String(), store.fetch, cidLimits())
	require.ErrorContains(t, err, "must be a string")

	// A reader that takes only CIDs refuses the files (the sidetree profile's local reader).
	_, err = Read(profile, files.Anchor.String(), fetch, cidLimits())
	require.Error(t, err)

	// A reference longer than the URI limit is refused when it is built, not when it is read.
	short := l
	short.MaxCASURILength = 100
	_, err = Build(m.interleaved(), cidv0, short)
	require.ErrorContains(t, err, "longer than 100")
}
