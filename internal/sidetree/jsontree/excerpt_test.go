package jsontree

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuoteExcerpt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"alg", `"alg"`},
		{strings.Repeat("a", 32), `"` + strings.Repeat("a", 32) + `"`},
		{strings.Repeat("a", 33), `"` + strings.Repeat("a", 32) + `"...`},
		// A rune across the cut is left out whole.
		{strings.Repeat("a", 31) + "é" + "tail", `"` + strings.Repeat("a", 31) + `"...`},
		{"\x00\"quote", `"\x00\"quote"`},
		{strings.Repeat("\xff", 1<<16), `"` + strings.Repeat(`\xff`, 32) + `"...`},
	} {
		require.Equal(t, tc.want, QuoteExcerpt(tc.in))
	}
}
