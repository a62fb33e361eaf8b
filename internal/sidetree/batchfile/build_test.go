package batchfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

func quoted(s string) string { return string(jsontree.AppendQuoted(nil, s)) }

func refs(ops []*sidetree.Operation) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = `{"didSuffix":` + quoted(op.Suffix) + `,"revealValue":` + quoted(op.RevealValue) + `}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func proofs(ops []*sidetree.Operation) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = `{"signedData":` + quoted(op.SignedData) + `}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func deltas(groups ...[]*sidetree.Operation) string {
	var parts []string
	for _, g := range groups {
		for _, op := range g {
			parts = append(parts, string(op.Delta.JSON()))
		}
	}
	return `{"deltas":[` + strings.Join(parts, ",") + `]}`
}

func creates(ops []*sidetree.Operation) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = `{"suffixData":` + string(op.SuffixData.JSON()) + `}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func uri(f *File) string { return quoted(f.URI) }

// TestBuildLayout checks every file's JSON against the reference implementation's layout.
func TestBuildLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                                string
		creates, updates, recovers, deacts  int
		coreProof, provProof, chunk, provIx bool
	}{
		{"all four types", 2, 2, 2, 2, true, true, true, true},
		{"creates only", 3, 0, 0, 0, false, false, true, true},
		{"updates only", 0, 2, 0, 0, false, true, true, true},
		{"deactivates only", 0, 0, 0, 2, true, false, false, false},
		{"recovers only", 0, 0, 2, 0, true, false, true, true},
		{"creates and deactivates", 1, 0, 0, 1, true, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := generate(t, tc.creates, tc.updates, tc.recovers, tc.deacts)
			files, err := Build(m.interleaved(), cidv0, DefaultLimits())
			require.NoError(t, err)
			require.Equal(t, tc.coreProof, files.CoreProof != nil)
			require.Equal(t, tc.provProof, files.ProvisionalProof != nil)
			require.Equal(t, tc.chunk, files.Chunk != nil)
			require.Equal(t, tc.provIx, files.ProvisionalIndex != nil)
			n := tc.creates + tc.updates + tc.recovers + tc.deacts
			require.Equal(t, Anchor{Count: n, CoreIndexURI: files.CoreIndex.URI}, files.Anchor)

			for _, f := range files.List() {
				require.Equal(t, []byte{0x1f, 0x8b}, f.Data[:2], "%s is gzip", f.Kind)
				require.Equal(t, cidv0(f.Data), f.URI)
			}
			if files.CoreProof != nil {
				require.Equal(t, `{"operations":{"recover":`+proofs(m.recovers)+`,"deactivate":`+proofs(m.deactivates)+`}}`, string(gunzip(t, files.CoreProof.Data)))
			}
			if files.ProvisionalProof != nil {
				require.Equal(t, `{"operations":{"update":`+proofs(m.updates)+`}}`, string(gunzip(t, files.ProvisionalProof.Data)))
			}
			if files.Chunk != nil {
				require.Equal(t, deltas(m.creates, m.recovers, m.updates), string(gunzip(t, files.Chunk.Data)))
			}
			if files.ProvisionalIndex != nil {
				want := `{"chunks":[{"chunkFileUri":` + uri(files.Chunk) + `}]`
				if tc.updates > 0 {
					want += `,"operations":{"update":` + refs(m.updates) + `},"provisionalProofFileUri":` + uri(files.ProvisionalProof)
				}
				require.Equal(t, want+"}", string(gunzip(t, files.ProvisionalIndex.Data)))
			}
			var members []string
			if files.ProvisionalIndex != nil {
				members = append(members, `"provisionalIndexFileUri":`+uri(files.ProvisionalIndex))
			}
			var ops []string
			if tc.creates > 0 {
				ops = append(ops, `"create":`+creates(m.creates))
			}
			if tc.recovers > 0 {
				ops = append(ops, `"recover":`+refs(m.recovers))
			}
			if tc.deacts > 0 {
				ops = append(ops, `"deactivate":`+refs(m.deactivates))
			}
			if len(ops) > 0 {
				members = append(members, `"operations":{`+strings.Join(ops, ",")+`}`)
			}
			if files.CoreProof != nil {
				members = append(members, `"coreProofFileUri":`+uri(files.CoreProof))
			}
			require.Equal(t, "{"+strings.Join(members, ",")+"}", string(gunzip(t, files.CoreIndex.Data)))
			// Files are listed in write order: each one's URI is known before a file names it.
			list := files.List()
			require.Equal(t, CoreIndex, list[len(list)-1].Kind)
		})
	}
}

// TestBuildReadRoundTrip: every operation comes back from the reader as the same request bytes,
// at its anchor position, and ParseOperation accepts it.
func TestBuildReadRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ creates, updates, recovers, deacts int }{
		{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {5, 4, 3, 2}, {40, 30, 20, 10},
	} {
		m := generate(t, tc.creates, tc.updates, tc.recovers, tc.deacts)
		s := newStore()
		l := cidLimits()
		files, err := Build(m.interleaved(), cidv0, l)
		require.NoError(t, err)
		s.put(files)
		b, err := Read(profile, files.Anchor.String(), s.fetch, l)
		require.NoError(t, err)
		require.NoError(t, b.ProvisionalErr)
		require.Equal(t, files.Anchor, b.Anchor)
		want := m.anchorOrder()
		require.Len(t, b.Operations, len(want))
		require.Equal(t, b.Operations, unparsed(files.Operations), "what Build says it wrote is what Read finds")
		for i, op := range files.Operations {
			require.Equal(t, op.Suffix, op.Parsed.Suffix, "operation %d carries its parse", i)
		}
		for i, got := range b.Operations {
			require.Equal(t, i, got.Position)
			require.Equal(t, want[i].Type, got.Type)
			require.Equal(t, want[i].Suffix, got.Suffix)
			require.Equal(t, string(want[i].Request), string(got.Request))
			op, err := sidetree.ParseOperation(got.Request, profile)
			require.NoError(t, err)
			require.Equal(t, want[i].Suffix, op.Suffix)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	m := generate(t, 2, 1, 1, 0)

	_, err := Build(nil, cidv0, DefaultLimits())
	require.ErrorIs(t, err, ErrNoOperations)

	_, err = Build([]*sidetree.Operation{m.creates[0], nil}, cidv0, DefaultLimits())
	require.ErrorContains(t, err, "nil")

	// One operation per DID: the second create of the same DID is named.
	dup := []*sidetree.Operation{m.creates[0], m.updates[0], m.creates[1], m.creates[0]}
	_, err = Build(dup, cidv0, DefaultLimits())
	var dupErr *DuplicateSuffixError
	require.ErrorAs(t, err, &dupErr)
	require.Equal(t, DuplicateSuffixError{Suffix: m.creates[0].Suffix, First: 0, Second: 3}, *dupErr)

	_, err = Build(m.interleaved(), cidv0, Limits{MaxOperations: 3})
	var capErr *CapacityError
	require.ErrorAs(t, err, &capErr)
	require.Equal(t, CapacityError{Kind: Count, Size: 4, Limit: 3, Fit: 3}, *capErr)

	// A CAS address that is not a valid URI is a configuration error.
	_, err = Build(m.creates, func([]byte) string { return strings.Repeat("x", 101) }, DefaultLimits())
	require.Error(t, err)
	require.False(t, errors.As(err, &capErr))
}

// TestBuildCapacity: a batch that overflows a file's cap reports that file and a prefix that
// fits, close to the largest one.
func TestBuildCapacity(t *testing.T) {
	t.Parallel()
	m := generate(t, 150, 0, 0, 0)
	for _, tc := range []struct {
		kind   Kind
		limits Limits
	}{
		{CoreIndex, Limits{MaxCoreIndexFileSize: 5_000}},
		{Chunk, Limits{MaxChunkFileSize: 12_000}},
	} {
		_, err := Build(m.creates, cidv0, tc.limits)
		var capErr *CapacityError
		require.ErrorAs(t, err, &capErr)
		require.Equal(t, tc.kind, capErr.Kind)
		require.Greater(t, capErr.Size, capErr.Limit)
		require.Positive(t, capErr.Fit)
		_, err = Build(m.creates[:capErr.Fit], cidv0, tc.limits)
		require.NoError(t, err, "the reported prefix fits")
		largest := capErr.Fit
		for largest < len(m.creates) {
			if _, err := Build(m.creates[:largest+1], cidv0, tc.limits); err != nil {
				break
			}
			largest++
		}
		require.GreaterOrEqual(t, float64(capErr.Fit), 0.9*float64(largest), "fit %d, largest %d", capErr.Fit, largest)
		require.Contains(t, capErr.Error(), string(tc.kind))
	}

	// Too many operations, and the first MaxOperations overflow the core index file too: Fit
	// is a count that builds.
	l := Limits{MaxOperations: 120, MaxCoreIndexFileSize: 5_000}
	_, err := Build(m.creates, cidv0, l)
	var capErr *CapacityError
	require.ErrorAs(t, err, &capErr)
	require.Equal(t, Count, capErr.Kind)
	require.Less(t, capErr.Fit, 120)
	_, err = Build(m.creates[:capErr.Fit], cidv0, l)
	require.NoError(t, err)
}
