package sidetree

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// The binary form of a StateRecord (AppendBinary), version 1 or 2. Integers are unsigned
// varints, strings and byte strings a varint length and the bytes:
//
//	version       byte (1, or 2 when the state's canonical time is known)
//	flags         byte: state, deactivated, published, publicKeys present, services present
//	positions     count, then per position the sequence's difference from the previous one
//	              (the first: the sequence itself) and the index
//	state, if the flag is set:
//	  operations, last sequence, create sequence, canonical sequence
//	  canonical time, in version 2 only
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
//
// Version 2 differs only by the canonical time. A record without one is written as version 1,
// byte for byte as before; an anchord that predates version 2 finds a version 2 record
// unreadable and computes the DID's state from its operations, as for any record it cannot
// decode.
const (
	stateRecordVersion     = 1
	stateRecordVersionTime = 2
)

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
	version := byte(stateRecordVersion)
	if st != nil && st.CanonicalTime > 0 {
		version = stateRecordVersionTime
	}
	b = append(b, version, flags)
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
		if version == stateRecordVersionTime {
			b = binary.AppendUvarint(b, uint64(st.CanonicalTime))
		}
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
		if out, ok := appendTemplateFill(append(b, byte(i+1)), t, jwk); ok {
			return out
		}
	}
	b = binary.AppendUvarint(append(b, 0), uint64(len(jwk)))
	return append(b, jwk...)
}

// appendTemplateFill appends, each as a byte string, the decoded values that fill t's holes to
// give jwk exactly, if any do. When none do it returns false, having written past b's length.
// The values are decoded in place, without a copy: every indexed create and update encodes its
// DID's keys.
func appendTemplateFill(b []byte, t []string, jwk []byte) ([]byte, bool) {
	rest, ok := cutPrefix(jwk, t[0])
	if !ok {
		return b, false
	}
	for _, seg := range t[1:] {
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return b, false
		}
		enc := rest[:end]
		// Canonical base64url is what re-encoding the value gives back. The decoder skips CR
		// and LF, so a value with either is not; without them, a strict decode to the full
		// length is.
		if bytes.ContainsAny(enc, "\r\n") {
			return b, false
		}
		n := base64.RawURLEncoding.DecodedLen(len(enc))
		b = binary.AppendUvarint(b, uint64(n))
		at := len(b)
		b = slices.Grow(b, n)[:at+n]
		if got, err := base64.RawURLEncoding.Strict().Decode(b[at:], enc); err != nil || got != n {
			return b, false
		}
		if rest, ok = cutPrefix(rest[end:], seg); !ok {
			return b, false
		}
	}
	return b, len(rest) == 0
}

// cutPrefix is bytes.CutPrefix with a string prefix, which it does not copy.
func cutPrefix(s []byte, prefix string) ([]byte, bool) {
	if len(s) < len(prefix) || string(s[:len(prefix)]) != prefix {
		return s, false
	}
	return s[len(prefix):], true
}

func appendCommitment(b []byte, c string) []byte {
	if c == "" {
		return append(b, 0)
	}
	if raw, ok := decodeMultihashBytes(c); ok {
		return append(append(b, 1), raw[:]...)
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
