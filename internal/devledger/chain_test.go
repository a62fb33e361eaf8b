package devledger

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckAnchor(t *testing.T) {
	t.Parallel()

	for anchor, wantErr := range map[string]string{
		"1.QmRef":                 "",
		"4294967295.bafyreiabc":   "",
		"42.QmXyz.with.more.dots": "",
		"":                        "want",
		"QmRef":                   "want",
		".QmRef":                  "positive integer",
		"0.QmRef":                 "positive integer",
		"01.QmRef":                "positive integer",
		"-1.QmRef":                "positive integer",
		"4294967296.QmRef":        "below 2^32",
		"1.":                      "reference is empty",
		"1.Qm Ref":                "white space",
		"1.Qm\x00Ref":             "unprintable",
		"12a.QmRef":               "below 2^32",
	} {
		got := checkAnchor(anchor)
		if wantErr == "" {
			require.Empty(t, got, "anchor %q", anchor)
		} else {
			require.Contains(t, got, wantErr, "anchor %q", anchor)
		}
	}
}
