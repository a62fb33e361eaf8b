package sidetree

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// ErrStateRecord is what DecodeStateRecord returns, wrapped, for bytes that are not a record.
var ErrStateRecord = errors.New("not a DID state record")

// DecodeStateRecord reads a record AppendBinary wrote, of the DID with the given suffix. Bytes it
// cannot read (another version, a truncated or corrupted record) are an error wrapping
// ErrStateRecord, never a panic.
//
// It is most of what a resolution that misses the resolver's cache costs besides the read, so
// it allocates little: every decoded string is part of one buffer, the input and the
// commitments' base64url after it, and a record with one position shares one allocation with
// its state.
func DecodeStateRecord(suffix string, b []byte) (*StateRecord, error) {
	d := decoder{in: b}
	// Room for the two current commitments; the sets of used ones, when any, grow it.
	d.text.Grow(len(b) + 2*EncodedMultihashLength)
	_, _ = d.text.Write(b)
	d.s = d.text.String()
	rec, err := d.record(suffix)
	if err == nil && d.left() > 0 {
		err = fmt.Errorf("%d bytes after the record", d.left())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStateRecord, err)
	}
	return rec, nil
}

// decoder reads a record at off: strings from s, a copy of the input, and bytes to re-encode
// from in, the input itself, so that neither is converted to the other.
type decoder struct {
	in   []byte
	s    string
	off  int
	text strings.Builder // s, followed by the commitments decoded so far
}

var errTruncated = errors.New("truncated")

// recordWithState is a record, its state and its one position in one allocation: a DID with one
// operation, most DIDs.
type recordWithState struct {
	rec StateRecord
	st  State
	pos [1]Position
}

func (d *decoder) left() int { return len(d.s) - d.off }

func (d *decoder) record(suffix string) (*StateRecord, error) {
	version, err := d.byte()
	if err != nil {
		return nil, err
	}
	if version != stateRecordVersion && version != stateRecordVersionTime {
		return nil, fmt.Errorf("version %d", version)
	}
	flags, err := d.byte()
	if err != nil {
		return nil, err
	}
	n, err := d.count(2)
	if err != nil {
		return nil, err
	}
	var rec *StateRecord
	var st *State
	if flags&flagState != 0 {
		all := &recordWithState{}
		rec, st = &all.rec, &all.st
		if n == 1 {
			rec.Positions = all.pos[:]
		}
	} else {
		rec = &StateRecord{}
	}
	if n > 0 && rec.Positions == nil {
		rec.Positions = make([]Position, n)
	}
	var seq uint64
	for i := range rec.Positions {
		delta, err := d.uvarint()
		if err != nil {
			return nil, err
		}
		index, err := d.int()
		if err != nil {
			return nil, err
		}
		if seq+delta < seq {
			return nil, errors.New("sequence overflows")
		}
		seq += delta
		rec.Positions[i] = Position{Sequence: seq, Index: index}
		if i > 0 && comparePositions(rec.Positions[i-1], rec.Positions[i]) >= 0 {
			return nil, errors.New("positions out of order")
		}
	}
	if st != nil {
		if err = d.state(st, suffix, flags, version == stateRecordVersionTime); err != nil {
			return nil, err
		}
		rec.State = st
	} else if flags != 0 {
		return nil, fmt.Errorf("flags %#x without a state", flags)
	} else if version == stateRecordVersionTime {
		return nil, errors.New("a canonical time without a state")
	}
	if rec.unappliedRecovery, err = d.set(); err != nil {
		return nil, err
	}
	if rec.unappliedUpdate, err = d.set(); err != nil {
		return nil, err
	}
	return rec, nil
}

func (d *decoder) state(st *State, suffix string, flags byte, withTime bool) error {
	*st = State{Suffix: suffix, Deactivated: flags&flagDeactivated != 0, Published: flags&flagPublished != 0}
	var err error
	if st.Operations, err = d.int(); err != nil {
		return err
	}
	for _, v := range []*uint64{&st.LastSequence, &st.CreateSequence, &st.CanonicalSequence} {
		if *v, err = d.uvarint(); err != nil {
			return err
		}
	}
	if withTime {
		t, err := d.uvarint()
		if err != nil {
			return err
		}
		if t == 0 || t > math.MaxInt64 {
			return fmt.Errorf("canonical time %d", t)
		}
		st.CanonicalTime = int64(t)
	}
	if st.RecoveryCommitment, err = d.commitment(); err != nil {
		return err
	}
	if st.UpdateCommitment, err = d.commitment(); err != nil {
		return err
	}
	if st.AnchorOrigin, err = d.string(); err != nil {
		return err
	}
	if st.AnchoredBy, err = d.string(); err != nil {
		return err
	}
	if st.Document.PublicKeys, err = d.publicKeys(flags&flagPublicKeys != 0); err != nil {
		return err
	}
	if st.Document.Services, err = d.services(flags&flagServices != 0); err != nil {
		return err
	}
	n, err := d.count(1)
	if err != nil {
		return err
	}
	if n > 0 {
		st.Document.AlsoKnownAs = make([]string, n)
		for i := range st.Document.AlsoKnownAs {
			if st.Document.AlsoKnownAs[i], err = d.string(); err != nil {
				return err
			}
		}
	}
	if st.usedRecovery, err = d.set(); err != nil {
		return err
	}
	if st.usedUpdate, err = d.set(); err != nil {
		return err
	}
	return nil
}

func (d *decoder) publicKeys(present bool) ([]PublicKey, error) {
	n, err := d.count(4)
	if err != nil || (!present && n == 0) {
		return nil, err
	}
	if !present {
		return nil, errors.New("public keys without the flag")
	}
	keys := make([]PublicKey, n)
	// The keys' purposes, carved from one slice: keys usually serve as many purposes each.
	var names []string
	for i := range keys {
		k := &keys[i]
		if k.ID, err = d.string(); err != nil {
			return nil, err
		}
		if k.Type, err = d.name(); err != nil {
			return nil, err
		}
		purposes, err := d.count(0)
		if err != nil {
			return nil, err
		}
		if purposes > 0 {
			m := purposes - 1
			if m > d.left() {
				return nil, errTruncated
			}
			if cap(names)-len(names) < m {
				// Each name takes a byte at least, which bounds what the rest can need.
				names = make([]string, 0, max(m, min(m*(n-i), d.left())))
			}
			k.Purposes = names[len(names) : len(names)+m : len(names)+m]
			names = names[:len(names)+m]
			if k.Purposes == nil {
				// Present but empty, which AppendBinary tells from absent.
				k.Purposes = []string{}
			}
			for j := range k.Purposes {
				if k.Purposes[j], err = d.name(); err != nil {
					return nil, err
				}
			}
		}
		if k.JWK, err = d.jwk(); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func (d *decoder) services(present bool) ([]Service, error) {
	n, err := d.count(3)
	if err != nil || (!present && n == 0) {
		return nil, err
	}
	if !present {
		return nil, errors.New("services without the flag")
	}
	services := make([]Service, n)
	for i := range services {
		s := &services[i]
		if s.ID, err = d.string(); err != nil {
			return nil, err
		}
		if s.Type, err = d.string(); err != nil {
			return nil, err
		}
		if s.Endpoint, err = d.bytes(); err != nil {
			return nil, err
		}
	}
	return services, nil
}

func (d *decoder) jwk() ([]byte, error) {
	i, err := d.byte()
	if err != nil {
		return nil, err
	}
	if i == 0 {
		return d.bytes()
	}
	if int(i) > len(jwkTemplates) {
		return nil, fmt.Errorf("JWK template %d", i)
	}
	t := jwkTemplates[i-1]
	// The values first, to size the JWK exactly.
	var held [2][]byte
	values := held[:0]
	size := len(t[0])
	for _, seg := range t[1:] {
		n, err := d.count(1)
		if err != nil {
			return nil, err
		}
		values = append(values, d.in[d.off:d.off+n])
		d.off += n
		size += base64.RawURLEncoding.EncodedLen(n) + len(seg)
	}
	jwk := make([]byte, 0, size)
	jwk = append(jwk, t[0]...)
	for j, seg := range t[1:] {
		jwk = base64.RawURLEncoding.AppendEncode(jwk, values[j])
		jwk = append(jwk, seg...)
	}
	return jwk, nil
}

func (d *decoder) set() (map[string]struct{}, error) {
	n, err := d.count(1)
	if err != nil || n == 0 {
		return nil, err
	}
	set := make(map[string]struct{}, n)
	for range n {
		c, err := d.commitment()
		if err != nil {
			return nil, err
		}
		set[c] = struct{}{}
	}
	return set, nil
}

func (d *decoder) commitment() (string, error) {
	tag, err := d.byte()
	if err != nil {
		return "", err
	}
	switch tag {
	case 0:
		return "", nil
	case 1:
		if d.left() < multihashSize {
			return "", errTruncated
		}
		var enc [EncodedMultihashLength]byte
		base64.RawURLEncoding.Encode(enc[:], d.in[d.off:d.off+multihashSize])
		d.off += multihashSize
		_, _ = d.text.Write(enc[:])
		text := d.text.String()
		return text[len(text)-len(enc):], nil
	case 2:
		return d.string()
	}
	return "", fmt.Errorf("commitment tag %d", tag)
}

func (d *decoder) name() (string, error) {
	i, err := d.byte()
	if err != nil {
		return "", err
	}
	if i == 0 {
		return d.string()
	}
	if int(i) > len(knownNames) {
		return "", fmt.Errorf("name %d", i)
	}
	return knownNames[i-1], nil
}

func (d *decoder) string() (string, error) {
	n, err := d.count(1)
	if err != nil {
		return "", err
	}
	s := d.s[d.off : d.off+n]
	d.off += n
	return s, nil
}

// bytes is string as a slice of its own.
func (d *decoder) bytes() ([]byte, error) {
	n, err := d.count(1)
	if err != nil {
		return nil, err
	}
	b := make([]byte, n)
	copy(b, d.in[d.off:])
	d.off += n
	return b, nil
}

func (d *decoder) byte() (byte, error) {
	if d.left() == 0 {
		return 0, errTruncated
	}
	c := d.s[d.off]
	d.off++
	return c, nil
}

// uvarint is binary.Uvarint over a string.
func (d *decoder) uvarint() (uint64, error) {
	// Most are one byte: counts, lengths, positions' indexes.
	if d.off < len(d.s) && d.s[d.off] < 0x80 {
		d.off++
		return uint64(d.s[d.off-1]), nil
	}
	var v uint64
	rest := d.s[d.off:]
	for i := 0; i < len(rest) && i < binary.MaxVarintLen64; i++ {
		c := rest[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errors.New("varint overflows")
			}
			d.off += i + 1
			return v | uint64(c)<<(7*i), nil
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	return 0, errTruncated
}

func (d *decoder) int() (int, error) {
	v, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if v > 1<<31-1 {
		return 0, fmt.Errorf("integer %d out of range", v)
	}
	return int(v), nil
}

// count reads a count of items that take at least minBytes each (0: no check beyond the int's
// range), so that a corrupted count cannot make the decoder allocate more than the input allows.
func (d *decoder) count(minBytes int) (int, error) {
	n, err := d.int()
	if err != nil {
		return 0, err
	}
	if n*minBytes > d.left() {
		return 0, errTruncated
	}
	return n, nil
}
