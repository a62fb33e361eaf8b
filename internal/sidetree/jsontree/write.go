package jsontree

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/gowebpki/jcs"
)

// Two serialisations of a parsed Value:
//
//   - compact: what JSON.stringify(JSON.parse(text)) gives in the reference implementation. Member
//     order is JavaScript's property order (array-index names first, ascending, then insertion
//     order), numbers in ECMAScript form. Batch files and stored requests use it, so the original
//     member order of JWKs and service endpoints survives into resolution results.
//   - canonical: RFC 8785 JCS, the input of every hash. Numbers are formatted by gowebpki/jcs's
//     NumberToJSON (the ES6 algorithm); the member sort and string escaping are RFC 8785 §3.2.
//     Equality with jcs.Transform is checked by TestCanonicalMatchesJCS and FuzzCanonical.

// AppendCompact appends the compact serialisation of v.
func (v *Value) AppendCompact(buf []byte) []byte {
	return v.appendJSON(buf, false)
}

// AppendCanonical appends the JCS serialisation of v.
func (v *Value) AppendCanonical(buf []byte) []byte {
	return v.appendJSON(buf, true)
}

func (v *Value) appendJSON(buf []byte, canonical bool) []byte {
	switch v.Kind {
	case Null:
		return append(buf, "null"...)
	case Boolean:
		if v.Bool {
			return append(buf, "true"...)
		}
		return append(buf, "false"...)
	case Number:
		return appendNumber(buf, v.Str)
	case String:
		return AppendQuoted(buf, v.Str)
	case Array:
		buf = append(buf, '[')
		for i := range v.Elems {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = v.Elems[i].appendJSON(buf, canonical)
		}
		return append(buf, ']')
	default:
		buf = append(buf, '{')
		order := memberOrder(v.Members, canonical) // nil: the members' own order
		for i := range v.Members {
			if i > 0 {
				buf = append(buf, ',')
			}
			m := &v.Members[i]
			if order != nil {
				m = &v.Members[order[i]]
			}
			buf = AppendQuoted(buf, m.Name)
			buf = append(buf, ':')
			buf = m.Value.appendJSON(buf, canonical)
		}
		return append(buf, '}')
	}
}

// memberOrder returns the indices of members in output order, or nil when that is their order.
func memberOrder(members []Member, canonical bool) []int {
	n := len(members)
	inOrder := true
	if canonical {
		for i := 1; i < n; i++ {
			if compareUTF16(members[i-1].Name, members[i].Name) >= 0 {
				inOrder = false
				break
			}
		}
	} else {
		for i := range members {
			if _, ok := arrayIndex(members[i].Name); ok {
				inOrder = false
				break
			}
		}
	}
	if inOrder {
		return nil
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if canonical {
		slices.SortFunc(order, func(a, b int) int { return compareUTF16(members[a].Name, members[b].Name) })
		return order
	}
	// JavaScript orders integer-like property names (array indices) first, numerically, then
	// the others in insertion order.
	slices.SortStableFunc(order, func(a, b int) int {
		ia, aok := arrayIndex(members[a].Name)
		ib, bok := arrayIndex(members[b].Name)
		switch {
		case aok && bok:
			return int(int64(ia) - int64(ib))
		case aok:
			return -1
		case bok:
			return 1
		default:
			return 0
		}
	})
	return order
}

// arrayIndex reports whether name is a canonical array index in JavaScript (0 … 2^32−2).
func arrayIndex(name string) (uint32, bool) {
	if name == "" || len(name) > 10 || name[0] < '0' || name[0] > '9' || (name[0] == '0' && len(name) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(name, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 §3.2.3 requires. UTF-8
// byte order equals code point order, which differs from UTF-16 order only when a supplementary
// character (4-byte UTF-8) meets a character in U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	if !strings.ContainsFunc(a, isSupplementary) && !strings.ContainsFunc(b, isSupplementary) {
		return strings.Compare(a, b)
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	return slices.Compare(ua, ub)
}

func isSupplementary(r rune) bool { return r > 0xFFFF }

// appendNumber writes a validated number in its ECMAScript form ("1.0" → "1", "1e2" → "100").
func appendNumber(buf []byte, text string) []byte {
	if isPlainInteger(text) {
		return append(buf, text...)
	}
	f, _ := strconv.ParseFloat(text, 64) // validated by the parser: finite
	s, err := jcs.NumberToJSON(f)
	if err != nil {
		// Unreachable for the finite values the parser admits; "null" is what JSON.stringify
		// writes for non-finite numbers.
		return append(buf, "null"...)
	}
	return append(buf, s...)
}

// isPlainInteger reports whether text is an integer literal short enough that its ECMAScript
// form is the text itself (no leading zero, no "-0", under 2^53).
func isPlainInteger(text string) bool {
	digits := strings.TrimPrefix(text, "-")
	if digits == "" || len(digits) > 15 || (digits[0] == '0' && (len(digits) > 1 || len(text) != len(digits))) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// AppendQuoted writes s as a JSON string with the escaping of JSON.stringify and RFC 8785:
// only '"', '\\' and control characters are escaped, the short forms where they exist.
func AppendQuoted(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none is escaped: most strings have nothing to escape
		// (a resolution result is mostly quoted identifiers and URLs). The last word is the
		// string's last eight bytes, which may overlap the one before. Each test is the classic
		// one for a zero byte in a word (after an XOR with the byte looked for) or a byte under
		// a bound, which may misplace the byte that matched but never misses one; a word with
		// one goes byte by byte.
		if len(s) >= 8 {
			j := min(i, len(s)-8)
			w := s[j : j+8]
			x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			quote, backslash := x^('"'*ones), x^('\\'*ones)
			control := (x - 0x20*ones) & ^x
			if (control|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs == 0 {
				i = j + 8
				continue
			}
		}
		c := s[i]
		i++
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i-1]...)
		start = i
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// Canonicalize returns the RFC 8785 (JCS) form of a JSON text. It rejects what Parse rejects.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return v.AppendCanonical(make([]byte, 0, len(data))), nil
}
