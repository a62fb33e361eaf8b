package sidetree

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The binary form of a StateRecord (AppendBinary), version 1. Integers are unsigned varints,
// strings and byte strings a varint length and the bytes:
//
//	version       byte (1)
//	flags         byte: state, deactivated, published, publicKeys present, services present
//	positions     count, then per position the sequence's difference from the previous one
//	              (the first: the sequence itself) and the index
//	state, if the flag is set:
//	  operations, last sequence, create sequence, canonical sequence
//	  recovery commitment, update commitment (commitment)
//	  anchor origin, anchored by (string)
//	  public keys   count, then each: id (string), type (name), purposes (count + 1, 0 for
//	                none, then each a name), JWK (jwk)
//	  services      count, then each: id, type (string), endpoint (bytes)
//	  alsoKnownAs   count, then each a string
//	  used recovery and update commitments (set)
//	unapplied recovery and update commitments (set)
//
// A jwk is a byte: 0 and the JWK's JSON as a string, or the 1-based index of a JSON template in
// jwkTemplates and, for each of its holes, the bytes whose canonical base64url fills it (a
// secp256k1 key's JSON is 124 bytes, its template form 66). A commitment is a tag byte: 0 for "", 1 and the 34 bytes of a multihash whose canonical
// base64url is the commitment, 2 and the string otherwise. A set is a count and its
// commitments in ascending order. A name is a byte: the 1-based index of a well-known key type
// or purpose, or 0 and the string.
const stateRecordVersion = 1

const (
	flagState = 1 << iota
	flagDeactivated
	flagPublished
	flagPublicKeys
	flagServices
)

// knownNames are the key types and purposes a name byte refers to. Appending is the only change
// this list may take: stored records refer to it by index.
var knownNames = []string{
	"EcdsaSecp256k1VerificationKey2019", "JsonWebKey2020", "Ed25519VerificationKey2018",
	"Ed25519VerificationKey2020", "Bls12381G2Key2020", "X25519KeyAgreementKey2019",
	"authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation", "keyAgreement",
}

// jwkTemplates are the JSON forms of public keys that JWKs are encoded by: literal segments,
// each hole between two filled with a base64url value. Appending is the only change this list
// may take: stored records refer to it by index.
var jwkTemplates = [][]string{
	{`{"kty":"EC","crv":"secp256k1","x":"`, `","y":"`, `"}`},
	{`{"crv":"secp256k1","kty":"EC","x":"`, `","y":"`, `"}`},
	{`{"kty":"OKP","crv":"Ed25519","x":"`, `"}`},
	{`{"crv":"Ed25519","kty":"OKP","x":"`, `"}`},
	{`{"kty":"EC","crv":"P-256","x":"`, `","y":"`, `"}`},
	{`{"crv":"P-256","kty":"EC","x":"`, `","y":"`, `"}`},
}

// AppendBinary appends the record's binary form to b. The suffix is left out: the index keys
// the record by it.
func (r *StateRecord) AppendBinary(b []byte) []byte {
	st := r.State
	var flags byte
	if st != nil {
		flags |= flagState
		if st.Deactivated {
			flags |= flagDeactivated
		}
		if st.Published {
			flags |= flagPublished
		}
		if st.Document.PublicKeys != nil {
			flags |= flagPublicKeys
		}
		if st.Document.Services != nil {
			flags |= flagServices
		}
	}
	b = append(b, stateRecordVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(r.Positions)))
	var prev uint64
	for _, p := range r.Positions {
		b = binary.AppendUvarint(b, p.Sequence-prev)
		b = binary.AppendUvarint(b, uint64(p.Index))
		prev = p.Sequence
	}
	if st != nil {
		b = binary.AppendUvarint(b, uint64(st.Operations))
		b = binary.AppendUvarint(b, st.LastSequence)
		b = binary.AppendUvarint(b, st.CreateSequence)
		b = binary.AppendUvarint(b, st.CanonicalSequence)
		b = appendCommitment(b, st.RecoveryCommitment)
		b = appendCommitment(b, st.UpdateCommitment)
		b = appendString(b, st.AnchorOrigin)
		b = appendString(b, st.AnchoredBy)
		b = binary.AppendUvarint(b, uint64(len(st.Document.PublicKeys)))
		for _, k := range st.Document.PublicKeys {
			b = appendString(b, k.ID)
			b = appendName(b, k.Type)
			if k.Purposes == nil {
				b = append(b, 0)
			} else {
				b = binary.AppendUvarint(b, uint64(len(k.Purposes))+1)
				for _, p := range k.Purposes {
					b = appendName(b, p)
				}
			}
			b = appendJWK(b, k.JWK)
		}
		b = binary.AppendUvarint(b, uint64(len(st.Document.Services)))
		for _, s := range st.Document.Services {
			b = appendString(b, s.ID)
			b = appendString(b, s.Type)
			b = appendString(b, string(s.Endpoint))
		}
		b = binary.AppendUvarint(b, uint64(len(st.Document.AlsoKnownAs)))
		for _, u := range st.Document.AlsoKnownAs {
			b = appendString(b, u)
		}
		b = appendSet(b, st.usedRecovery)
		b = appendSet(b, st.usedUpdate)
	}
	b = appendSet(b, r.unappliedRecovery)
	return appendSet(b, r.unappliedUpdate)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendName(b []byte, s string) []byte {
	if i := slices.Index(knownNames, s); i >= 0 {
		return append(b, byte(i+1))
	}
	return appendString(append(b, 0), s)
}

func appendJWK(b []byte, jwk []byte) []byte {
	for i, t := range jwkTemplates {
		if values, ok := matchTemplate(t, string(jwk)); ok {
			b = append(b, byte(i+1))
			for _, v := range values {
				b = appendString(b, string(v))
			}
			return b
		}
	}
	return appendString(append(b, 0), string(jwk))
}

// matchTemplate returns the decoded values that fill t's holes to give s exactly, if any do.
func matchTemplate(t []string, s string) ([][]byte, bool) {
	rest, ok := strings.CutPrefix(s, t[0])
	if !ok {
		return nil, false
	}
	values := make([][]byte, 0, len(t)-1)
	for _, seg := range t[1:] {
		end := strings.IndexByte(rest, '"')
		if end < 0 {
			return nil, false
		}
		v, err := base64.RawURLEncoding.Strict().DecodeString(rest[:end])
		if err != nil || base64.RawURLEncoding.EncodeToString(v) != rest[:end] {
			return nil, false
		}
		values = append(values, v)
		if rest, ok = strings.CutPrefix(rest[end:], seg); !ok {
			return nil, false
		}
	}
	return values, rest == ""
}

func appendCommitment(b []byte, c string) []byte {
	if c == "" {
		return append(b, 0)
	}
	if len(c) == EncodedMultihashLength {
		if raw, err := base64.RawURLEncoding.Strict().DecodeString(c); err == nil && len(raw) == multihashSize && base64.RawURLEncoding.EncodeToString(raw) == c {
			return append(append(b, 1), raw...)
		}
	}
	return appendString(append(b, 2), c)
}

func appendSet(b []byte, set map[string]struct{}) []byte {
	b = binary.AppendUvarint(b, uint64(len(set)))
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendCommitment(b, k)
	}
	return b
}

// ErrStateRecord is what DecodeStateRecord returns, wrapped, for bytes that are not a record.
var ErrStateRecord = errors.New("not a DID state record")

// DecodeStateRecord reads a record AppendBinary wrote, of the DID with the given suffix. Bytes it
// cannot read (another version, a truncated or corrupted record) are an error wrapping
// ErrStateRecord, never a panic.
func DecodeStateRecord(suffix string, b []byte) (*StateRecord, error) {
	// One copy of the input, which every decoded string is a part of.
	d := decoder{b: string(b)}
	rec, err := d.record(suffix)
	if err == nil && len(d.b) > 0 {
		err = fmt.Errorf("%d bytes after the record", len(d.b))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStateRecord, err)
	}
	return rec, nil
}

type decoder struct{ b string }

var errTruncated = errors.New("truncated")

func (d *decoder) record(suffix string) (*StateRecord, error) {
	version, err := d.byte()
	if err != nil {
		return nil, err
	}
	if version != stateRecordVersion {
		return nil, fmt.Errorf("version %d", version)
	}
	flags, err := d.byte()
	if err != nil {
		return nil, err
	}
	rec := &StateRecord{}
	n, err := d.count(2)
	if err != nil {
		return nil, err
	}
	if n > 0 {
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
	if flags&flagState != 0 {
		if rec.State, err = d.state(suffix, flags); err != nil {
			return nil, err
		}
	} else if flags != 0 {
		return nil, fmt.Errorf("flags %#x without a state", flags)
	}
	if rec.unappliedRecovery, err = d.set(); err != nil {
		return nil, err
	}
	if rec.unappliedUpdate, err = d.set(); err != nil {
		return nil, err
	}
	return rec, nil
}

func (d *decoder) state(suffix string, flags byte) (*State, error) {
	st := &State{Suffix: suffix, Deactivated: flags&flagDeactivated != 0, Published: flags&flagPublished != 0}
	var err error
	if st.Operations, err = d.int(); err != nil {
		return nil, err
	}
	for _, v := range []*uint64{&st.LastSequence, &st.CreateSequence, &st.CanonicalSequence} {
		if *v, err = d.uvarint(); err != nil {
			return nil, err
		}
	}
	if st.RecoveryCommitment, err = d.commitment(); err != nil {
		return nil, err
	}
	if st.UpdateCommitment, err = d.commitment(); err != nil {
		return nil, err
	}
	if st.AnchorOrigin, err = d.string(); err != nil {
		return nil, err
	}
	if st.AnchoredBy, err = d.string(); err != nil {
		return nil, err
	}
	if st.Document.PublicKeys, err = d.publicKeys(flags&flagPublicKeys != 0); err != nil {
		return nil, err
	}
	if st.Document.Services, err = d.services(flags&flagServices != 0); err != nil {
		return nil, err
	}
	n, err := d.count(1)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		st.Document.AlsoKnownAs = make([]string, n)
		for i := range st.Document.AlsoKnownAs {
			if st.Document.AlsoKnownAs[i], err = d.string(); err != nil {
				return nil, err
			}
		}
	}
	if st.usedRecovery, err = d.set(); err != nil {
		return nil, err
	}
	if st.usedUpdate, err = d.set(); err != nil {
		return nil, err
	}
	return st, nil
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
			if purposes-1 > len(d.b) {
				return nil, errTruncated
			}
			k.Purposes = make([]string, purposes-1)
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
		endpoint, err := d.string()
		if err != nil {
			return nil, err
		}
		s.Endpoint = []byte(endpoint)
	}
	return services, nil
}

func (d *decoder) jwk() ([]byte, error) {
	i, err := d.byte()
	if err != nil {
		return nil, err
	}
	if i == 0 {
		s, err := d.string()
		return []byte(s), err
	}
	if int(i) > len(jwkTemplates) {
		return nil, fmt.Errorf("JWK template %d", i)
	}
	t := jwkTemplates[i-1]
	jwk := make([]byte, 0, 128)
	jwk = append(jwk, t[0]...)
	for _, seg := range t[1:] {
		v, err := d.string()
		if err != nil {
			return nil, err
		}
		jwk = base64.RawURLEncoding.AppendEncode(jwk, []byte(v))
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
		if len(d.b) < multihashSize {
			return "", errTruncated
		}
		c := base64.RawURLEncoding.EncodeToString([]byte(d.b[:multihashSize]))
		d.b = d.b[multihashSize:]
		return c, nil
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
	s := d.b[:n]
	d.b = d.b[n:]
	return s, nil
}

func (d *decoder) byte() (byte, error) {
	if len(d.b) == 0 {
		return 0, errTruncated
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c, nil
}

// uvarint is binary.Uvarint over a string.
func (d *decoder) uvarint() (uint64, error) {
	var v uint64
	for i := 0; i < len(d.b) && i < binary.MaxVarintLen64; i++ {
		c := d.b[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errors.New("varint overflows")
			}
			d.b = d.b[i+1:]
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
	if n*minBytes > len(d.b) {
		return 0, errTruncated
	}
	return n, nil
}
