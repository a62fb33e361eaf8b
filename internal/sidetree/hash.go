package sidetree

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// Multihash parameters: SHA2-256 is the only hash Sidetree v1 and ION accept.
const (
	multihashSHA256 = 0x12
	sha256Size      = 32
	multihashSize   = 2 + sha256Size
	// EncodedMultihashLength is the length of every valid base64url multihash string.
	EncodedMultihashLength = 46
)

var (
	errNotBase64URL = errors.New("not a base64url string (charset A-Z a-z 0-9 - _, no padding, not empty)")
	errNonCanonical = errors.New("not canonical base64url (non-zero trailing bits)")
)

// isBase64URL reports whether s matches ^[A-Za-z0-9_-]+$, the reference implementation's test.
func isBase64URL(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// decodeBase64URL decodes unpadded base64url after the charset check. It tolerates non-zero
// trailing bits, like Node's Buffer does for JWS segments.
func decodeBase64URL(s string) ([]byte, error) {
	if !isBase64URL(s) {
		return nil, errNotBase64URL
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errNotBase64URL
	}
	return b, nil
}

// decodeBase64URLStrict also rejects non-zero trailing bits, so that exactly one string encodes
// each byte sequence. Hashes are compared as strings; strict decoding keeps that sound.
func decodeBase64URLStrict(s string) ([]byte, error) {
	if !isBase64URL(s) {
		return nil, errNotBase64URL
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		if _, lenient := base64.RawURLEncoding.DecodeString(s); lenient == nil {
			return nil, errNonCanonical
		}
		return nil, errNotBase64URL
	}
	return b, nil
}

func encodeBase64URL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// HashOut is the spec's hashing process: base64url(multihash(SHA-256(data))).
func HashOut(data []byte) string {
	sum := sha256.Sum256(data)
	return encodeDigest(sum)
}

func encodeDigest(sum [sha256Size]byte) string {
	var mh [multihashSize]byte
	mh[0], mh[1] = multihashSHA256, sha256Size
	copy(mh[2:], sum[:])
	return encodeBase64URL(mh[:])
}

// decodeMultihashBytes decodes s on the stack when it is the canonical base64url of
// multihashSize bytes, whatever they are. 46 characters that decode strictly to all 34 bytes
// hold no CR or LF (which the decoder skips; with one, 45 characters are left, a length no
// encoding has), so they are canonical without encoding them again.
func decodeMultihashBytes(s string) ([multihashSize]byte, bool) {
	var mh [multihashSize]byte
	if len(s) != EncodedMultihashLength {
		return mh, false
	}
	var src [EncodedMultihashLength]byte
	copy(src[:], s)
	n, err := base64.RawURLEncoding.Strict().Decode(mh[:], src[:])
	return mh, err == nil && n == multihashSize
}

// DecodeMultihash returns the SHA-256 digest carried by an encoded multihash. It is strict: the
// string must be canonical base64url of exactly 0x12 0x20 followed by 32 bytes.
func DecodeMultihash(s string) ([sha256Size]byte, error) {
	var digest [sha256Size]byte
	// Every resolution parses its DID's suffix: the common case is decoded on the stack.
	// Anything this refuses is refused below, with its reason.
	if mh, ok := decodeMultihashBytes(s); ok && mh[0] == multihashSHA256 && mh[1] == sha256Size {
		copy(digest[:], mh[2:])
		return digest, nil
	}
	b, err := decodeBase64URLStrict(s)
	if err != nil {
		return digest, err
	}
	if len(b) < 2 || b[0] != multihashSHA256 {
		return digest, errors.New("not a SHA2-256 multihash (code 0x12)")
	}
	if b[1] != sha256Size || len(b) != multihashSize {
		return digest, errors.New("multihash digest length is not 32")
	}
	copy(digest[:], b[2:])
	return digest, nil
}

// checkMultihash validates an encoded multihash member and names it in the error.
func checkMultihash(v *jsontree.Value, path string) (string, *Error) {
	if v == nil {
		return "", Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.String {
		return "", Errorf(CodeInvalidMultihash, "%s must be a string, not %s", path, v.TypeName())
	}
	if _, err := DecodeMultihash(v.Str); err != nil {
		return "", Wrap(CodeInvalidMultihash, err, "%s", path)
	}
	return v.Str, nil
}

// CommitmentFromReveal derives the commitment a reveal value opens: the reveal value's digest
// is hashed once more (the raw 32 bytes, not the multihash) and multihash-encoded.
func CommitmentFromReveal(reveal string) (string, error) {
	digest, err := DecodeMultihash(reveal)
	if err != nil {
		return "", err
	}
	return HashOut(digest[:]), nil
}

// RevealValue returns HashOut(JCS(jwk)) for a public key JWK given as JSON.
func RevealValue(jwk []byte) (string, error) {
	canon, err := Canonicalize(jwk)
	if err != nil {
		return "", err
	}
	return HashOut(canon), nil
}

// Commitment returns the commitment of a public key JWK given as JSON:
// base64url(multihash(SHA-256(SHA-256(JCS(jwk))))).
func Commitment(jwk []byte) (string, error) {
	canon, err := Canonicalize(jwk)
	if err != nil {
		return "", err
	}
	return commitmentOfCanonical(canon), nil
}

func commitmentOfCanonical(canon []byte) string {
	inner := sha256.Sum256(canon)
	return HashOut(inner[:])
}

// Canonicalize returns the RFC 8785 (JCS) form of a JSON text; see package jsontree for what it
// rejects (invalid UTF-8, duplicate member names, lone surrogates, non-finite numbers, nesting
// deeper than jsontree.MaxDepth).
func Canonicalize(data []byte) ([]byte, error) {
	canon, err := jsontree.Canonicalize(data)
	if err != nil {
		return nil, Wrap(CodeInvalidJSON, err, "")
	}
	return canon, nil
}
