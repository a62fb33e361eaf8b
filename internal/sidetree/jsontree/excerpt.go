package jsontree

import (
	"strconv"
	"unicode/utf8"
)

// MaxExcerptBytes bounds how much of a client's string an error message repeats.
const MaxExcerptBytes = 32

// QuoteExcerpt quotes s as strconv.Quote does, cut to its first MaxExcerptBytes bytes (at a rune
// boundary) and followed by "..." when cut. Error messages name the offending input with it: a
// 60 KiB member name must not come back 60 KiB long (or twice that once escaped) in a 400 body
// or a log line.
func QuoteExcerpt(s string) string {
	if len(s) <= MaxExcerptBytes {
		return strconv.Quote(s)
	}
	n := MaxExcerptBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n]) + "..."
}
