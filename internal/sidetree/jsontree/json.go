// Package jsontree parses JSON into an ordered tree and writes it back in the two forms Sidetree
// needs: compact, as JavaScript's JSON.stringify(JSON.parse(text)) would, and canonical (RFC 8785
// JCS), the input of every Sidetree hash.
//
// It exists instead of encoding/json maps because Sidetree validation needs what maps lose: the
// exact member count and order of an object (the reference implementation counts Object.keys and
// re-serialises with JSON.stringify, whose order shows in resolution results), and refusal of
// duplicate member names (JSON.parse keeps the last, JCS rejects them; an ambiguous document must
// not be hashed one way and applied another). It has no Sidetree knowledge.
package jsontree

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting. Sidetree requests need about ten levels; the rest is headroom for JWK
// and service endpoint objects. Deeper input is rejected, not truncated.
const MaxDepth = 100

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON kinds.
const (
	Null Kind = iota
	Boolean
	Number
	String
	Array
	Object
)

// Value is one parsed JSON value. Str holds a string's decoded contents or a number's source
// text (grammar-checked and finite as a float64). Members keep their order of appearance and have
// distinct names.
type Value struct {
	Kind    Kind
	Bool    bool
	Str     string
	Elems   []Value
	Members []Member
}

// Member is one name/value pair of an object.
type Member struct {
	Name  string
	Value Value
}

// TypeName is the JavaScript-like name of v's kind, for messages.
func (v *Value) TypeName() string {
	switch v.Kind {
	case Null:
		return "null"
	case Boolean:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	default:
		return "object"
	}
}

// Member returns the value of the named member of an object, or nil.
func (v *Value) Member(name string) *Value {
	for i := range v.Members {
		if v.Members[i].Name == name {
			return &v.Members[i].Value
		}
	}
	return nil
}

// ErrSyntax is wrapped by every Parse error.
var ErrSyntax = errors.New("invalid JSON")

type jsonParser struct {
	data  []byte
	pos   int
	depth int
}

// Parse parses one complete JSON text (RFC 8259, UTF-8, no duplicate names, no lone
// surrogates, finite numbers).
func Parse(data []byte) (Value, error) {
	p := jsonParser{data: data}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Value{}, p.fail("unexpected data after the top-level value")
	}
	return v, nil
}

func (p *jsonParser) fail(msg string) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, p.pos, msg)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (Value, error) {
	if p.pos >= len(p.data) {
		return Value{}, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.string()
		return Value{Kind: String, Str: s}, err
	case c == 't':
		return Value{Kind: Boolean, Bool: true}, p.literal("true")
	case c == 'f':
		return Value{Kind: Boolean}, p.literal("false")
	case c == 'n':
		return Value{Kind: Null}, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return Value{}, p.fail("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (p *jsonParser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	return nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.fail(fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	}
	return nil
}

func (p *jsonParser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '{'
	v := Value{Kind: Object}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	// Most objects in Sidetree data have at most four members.
	v.Members = make([]Member, 0, 4)
	var seen map[string]struct{}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail("expected a member name")
		}
		name, err := p.string()
		if err != nil {
			return Value{}, err
		}
		if dupErr := p.checkDuplicate(&v, &seen, name); dupErr != nil {
			return Value{}, dupErr
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail("expected ':'")
		}
		p.pos++
		p.skipSpace()
		val, err := p.value()
		if err != nil {
			return Value{}, err
		}
		v.Members = append(v.Members, Member{Name: name, Value: val})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or '}'")
		}
	}
}

// checkDuplicate scans small objects linearly and switches to a set once they grow, so that an
// object with many members stays linear.
func (p *jsonParser) checkDuplicate(v *Value, seen *map[string]struct{}, name string) error {
	const linearLimit = 16
	if *seen == nil && len(v.Members) >= linearLimit {
		*seen = make(map[string]struct{}, 2*len(v.Members))
		for _, m := range v.Members {
			(*seen)[m.Name] = struct{}{}
		}
	}
	if *seen != nil {
		if _, dup := (*seen)[name]; dup {
			return p.fail("duplicate member name " + QuoteExcerpt(name))
		}
		(*seen)[name] = struct{}{}
		return nil
	}
	for _, m := range v.Members {
		if m.Name == name {
			return p.fail("duplicate member name " + QuoteExcerpt(name))
		}
	}
	return nil
}

func (p *jsonParser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '['
	v := Value{Kind: Array}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return v, nil
	}
	for {
		p.skipSpace()
		val, err := p.value()
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, val)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return Value{}, p.fail("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return v, nil
		default:
			return Value{}, p.fail("expected ',' or ']'")
		}
	}
}

func (p *jsonParser) number() (Value, error) {
	start := p.pos
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case p.pos < len(d) && d[p.pos] >= '1' && d[p.pos] <= '9':
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
	default:
		return Value{}, p.fail("invalid number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if !p.digits() {
			return Value{}, p.fail("invalid number fraction")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if !p.digits() {
			return Value{}, p.fail("invalid number exponent")
		}
	}
	text := string(d[start:p.pos])
	// A number too large for a float64 would become Infinity in JavaScript and "null" in
	// JSON.stringify; no canonical form exists, so refuse it.
	if f, _ := strconv.ParseFloat(text, 64); math.IsInf(f, 0) {
		return Value{}, p.fail("number out of range")
	}
	return Value{Kind: Number, Str: text}, nil
}

func (p *jsonParser) digits() bool {
	start := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	return p.pos > start
}

// string parses a quoted string at p.pos and returns its decoded contents.
func (p *jsonParser) string() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	d := p.data
	ascii := true
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			raw := d[start:p.pos]
			p.pos++
			if !ascii && !utf8.Valid(raw) {
				return "", p.fail("string is not valid UTF-8")
			}
			return string(raw), nil
		case c == '\\':
			return p.escapedString(start)
		case c < 0x20:
			return "", p.fail("control character in string")
		case c >= 0x80:
			ascii = false
		}
		p.pos++
	}
	return "", p.fail("unterminated string")
}

// escapedString continues a string that contains escapes, from its first character at start.
func (p *jsonParser) escapedString(start int) (string, error) {
	var b strings.Builder
	b.Grow(p.pos - start + 16)
	p.pos = start
	d := p.data
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c < 0x20:
			return "", p.fail("control character in string")
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x80:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(d[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("string is not valid UTF-8")
			}
			b.Write(d[p.pos : p.pos+size])
			p.pos += size
		}
	}
	return "", p.fail("unterminated string")
}

func (p *jsonParser) escape(b *strings.Builder) error {
	d := p.data
	if p.pos+1 >= len(d) {
		return p.fail("unterminated escape")
	}
	c := d[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		b.WriteByte(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		r, err := p.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(r) {
			// Only a high surrogate followed by an escaped low surrogate is a character; a lone
			// surrogate cannot be represented in UTF-8 and so has no canonical form.
			if r >= 0xDC00 || p.pos+1 >= len(d) || d[p.pos] != '\\' || d[p.pos+1] != 'u' {
				return p.fail("lone surrogate in string")
			}
			p.pos += 2
			low, err := p.hex4()
			if err != nil {
				return err
			}
			r = utf16.DecodeRune(r, low)
			if r == utf8.RuneError {
				return p.fail("lone surrogate in string")
			}
		}
		b.WriteRune(r)
	default:
		return p.fail("invalid escape")
	}
	return nil
}

func (p *jsonParser) hex4() (rune, error) {
	if len(p.data)-p.pos < 4 {
		return 0, p.fail("short \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, p.fail("invalid \\u escape")
		}
	}
	p.pos += 4
	return r, nil
}
