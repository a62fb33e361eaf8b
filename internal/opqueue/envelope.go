package opqueue

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// decodeEnvelope reads an operation message exactly as json.Unmarshal into an envelope does.
//
// A body laid out byte for byte as encodeAll writes it — json.Marshal's member order, no
// whitespace, strings of printable ASCII without escapes — is read by decodeEnvelopeFast, which
// finds each string's end with bytes.IndexByte and decodes the base64 request straight from
// the body: encoding/json scans every byte of the long requests twice through its state
// machine (validation, then decoding), which was most of what a consumer spent per operation.
// Anything else is left to encoding/json, so no message is read differently from before.
func decodeEnvelope(body []byte) (envelope, error) {
	if e, ok := decodeEnvelopeFast(body); ok {
		return e, nil
	}
	var e envelope
	err := json.Unmarshal(body, &e)
	return e, err
}

// envelopeScan reads a body in encodeAll's layout; any deviation sets failed, and the body is
// left to encoding/json.
type envelopeScan struct {
	b      []byte
	failed bool
}

// decodeEnvelopeFast decodes a body in encodeAll's layout; false means it is not in that layout.
func decodeEnvelopeFast(body []byte) (envelope, bool) {
	s := envelopeScan{b: body}
	if !s.literal(`{"ops":[`) {
		return envelope{}, false
	}
	var ops []message
	for len(ops) == 0 || s.literal(",") {
		var m message
		m.OpID = s.member(`{"opId":`)
		m.Suffix = s.member(`,"suffix":`)
		m.Type = s.member(`,"type":`)
		m.Request = s.request()
		if s.literal(`,"attempts":`) {
			m.Attempts = s.count()
		}
		if s.literal(`,"history":[`) {
			m.History = append(m.History, s.str())
			for s.literal(",") {
				m.History = append(m.History, s.str())
			}
			s.expect("]")
		}
		s.expect("}")
		if s.failed {
			return envelope{}, false
		}
		ops = append(ops, m)
	}
	s.expect("]}")
	if s.failed || len(s.b) != 0 {
		return envelope{}, false
	}
	return envelope{Ops: ops}, true
}

// literal consumes lit if the body continues with it.
func (s *envelopeScan) literal(lit string) bool {
	if s.failed || !bytes.HasPrefix(s.b, []byte(lit)) {
		return false
	}
	s.b = s.b[len(lit):]
	return true
}

func (s *envelopeScan) expect(lit string) {
	if !s.literal(lit) {
		s.failed = true
	}
}

// member reads the named member's string value.
func (s *envelopeScan) member(name string) string {
	s.expect(name)
	return s.str()
}

// raw returns the contents of a string that has no escape and only printable ASCII (what
// encoding/json reads as the same bytes), or fails.
func (s *envelopeScan) raw() []byte {
	if s.failed || len(s.b) == 0 || s.b[0] != '"' {
		s.failed = true
		return nil
	}
	end := bytes.IndexByte(s.b[1:], '"')
	if end < 0 {
		s.failed = true
		return nil
	}
	v := s.b[1 : 1+end]
	for _, c := range v {
		if c < 0x20 || c > 0x7e || c == '\\' {
			s.failed = true
			return nil
		}
	}
	s.b = s.b[2+end:]
	return v
}

func (s *envelopeScan) str() string { return string(s.raw()) }

// request reads the request member: base64 as encoding/json writes []byte.
func (s *envelopeScan) request() []byte {
	s.expect(`,"request":`)
	v := s.raw()
	if s.failed {
		return nil
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
	n, err := base64.StdEncoding.Decode(out, v)
	if err != nil {
		s.failed = true
		return nil
	}
	return out[:n]
}

// count reads a non-negative integer as encoding/json writes one.
func (s *envelopeScan) count() int {
	i := 0
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		i++
	}
	if i == 0 || (i > 1 && s.b[0] == '0') {
		s.failed = true
		return 0
	}
	n, err := strconv.ParseInt(string(s.b[:i]), 10, strconv.IntSize)
	if err != nil {
		s.failed = true
		return 0
	}
	s.b = s.b[i:]
	return int(n)
}
