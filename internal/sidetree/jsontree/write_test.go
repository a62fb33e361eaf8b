package jsontree

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// quotedByByte is AppendQuoted as it was before it skipped plain bytes eight at a time.
func quotedByByte(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			b.WriteString(`\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xF]))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestAppendQuotedEscapesEveryByteAnywhere: every byte value, at every position of strings
// around the eight-byte steps, is escaped as the byte-by-byte writer escapes it, and so are
// random strings dense in bytes to escape and in bytes that neighbour them.
func TestAppendQuotedEscapesEveryByteAnywhere(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 24} {
		for pos := range n {
			for c := range 256 {
				s := []byte(strings.Repeat("a", n))
				s[pos] = byte(c)
				require.Equal(t, quotedByByte(string(s)), string(AppendQuoted([]byte("x"), string(s)))[1:], "byte %#x at %d of %d", c, pos, n)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte{0, 0x1f, 0x20, 0x21, '"', '#', '\\', ']', 'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff, '\n', '\t'}
	for range 20_000 {
		s := make([]byte, rng.IntN(40))
		for i := range s {
			if rng.IntN(4) == 0 {
				s[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				s[i] = byte(rng.IntN(256))
			}
		}
		require.Equal(t, quotedByByte(string(s)), string(AppendQuoted(nil, string(s))), "%q", s)
	}
	valid := string(AppendQuoted(nil, "did:sidetree:EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A\u2028é"))
	var back string
	require.NoError(t, json.Unmarshal([]byte(valid), &back))
}
