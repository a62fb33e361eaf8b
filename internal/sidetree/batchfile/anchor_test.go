package batchfile

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

const helloCID = "QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o"

func TestParseAnchorString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		in     string
		limits Limits
		count  int
		code   sidetree.Code
	}{
		{"one", "1." + helloCID, cidLimits(), 1, ""},
		{"max", "10000." + helloCID, cidLimits(), 10000, ""},
		{"mock CAS URI without check", "5.EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg", DefaultLimits(), 5, ""},
		{"over max", "10001." + helloCID, cidLimits(), 0, sidetree.CodeOperationCountExceedsLimit},
		{"over a configured max", "101." + helloCID, Limits{MaxOperations: 100}, 0, sidetree.CodeOperationCountExceedsLimit},
		{"huge count", "99999999999999999999999." + helloCID, cidLimits(), 0, sidetree.CodeOperationCountExceedsLimit},
		{"zero", "0." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"leading zero", "01." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"negative", "-1." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"plus", "+1." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"space", " 1." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"no count", "." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"no dot", helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"three parts", "1." + helloCID + ".x", cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"ION prefix", "ion:1." + helloCID, cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"empty URI", "1.", DefaultLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"URI too long", "1." + strings.Repeat("a", 101), DefaultLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"not a CID", "1.EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg", cidLimits(), 0, sidetree.CodeInvalidAnchorString},
		{"empty", "", cidLimits(), 0, sidetree.CodeInvalidAnchorString},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := ParseAnchorString(tc.in, tc.limits)
			if tc.code != "" {
				require.Equal(t, tc.code, sidetree.CodeOf(err), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.count, a.Count)
			require.Equal(t, tc.in, a.String())
		})
	}
}

func FuzzParseAnchorString(f *testing.F) {
	f.Add("1." + helloCID)
	f.Add("10000.bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi")
	f.Add("01.x")
	l := cidLimits()
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnchorString(s, l)
		if err != nil {
			require.NotEmpty(t, sidetree.CodeOf(err))
			return
		}
		require.Equal(t, s, a.String())
		require.True(t, a.Count >= 1 && a.Count <= MaxOperationsDefault)
	})
}
