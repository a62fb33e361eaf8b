package sidetree

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// coordinateLength is the base64url length of a 32-byte JWK coordinate; the reference
// implementation requires exactly this length (leading zero bytes are kept).
const coordinateLength = 43

// signingKey is a revealed update or recovery key: the JWK inside a JWS payload.
type signingKey struct {
	alg       Algorithm
	crv       string // the JWK's crv: what verification goes by under Orb's rules
	canonical []byte // JCS of the JWK: the input of reveal values and commitments
	x, y      string // base64url coordinates; y is empty for Ed25519
	// opens is commitmentOfCanonical(canonical), computed once at parse: intake and resolution
	// each ask for it, and resolution of a cached parse (OperationCache) asks every time.
	opens string
}

// parseSigningKey validates a JWK the way the reference implementation's validateJwkEs256k does
// (only kty, crv, x, y; kty "EC"; crv "secp256k1"; x and y strings of 43 characters), with one
// addition: an Ed25519 JWK ({"kty":"OKP","crv":"Ed25519","x"}, exactly those members) when the
// profile enables EdDSA. The key's algorithm must equal the JWS header's.
func parseSigningKey(v *jsontree.Value, p Profile, headerAlg Algorithm, path string) (*signingKey, *Error) {
	if v == nil {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidKey, "%s must be a JWK object, not %s", path, v.TypeName())
	}
	if p.Orb {
		return parseOrbSigningKey(v, path)
	}
	kty := v.Member("kty")
	k := &signingKey{}
	allowed := []string{"kty", "crv", "x", "y"}
	if kty != nil && kty.Kind == jsontree.String && kty.Str == "OKP" {
		k.alg = EdDSA
		allowed = allowed[:3]
	} else {
		k.alg = ES256K
	}
	for _, m := range v.Members {
		if !contains(allowed, m.Name) {
			return nil, Errorf(CodeInvalidKey, "%s: member %s is not allowed in a %s JWK", path, jsontree.QuoteExcerpt(m.Name), keyName(k.alg))
		}
	}
	if k.alg == ES256K {
		if kty == nil || kty.Kind != jsontree.String || kty.Str != "EC" {
			return nil, Errorf(CodeInvalidKey, "%s.kty must be \"EC\" (or \"OKP\" for Ed25519)", path)
		}
		if crv := v.Member("crv"); crv == nil || crv.Kind != jsontree.String || crv.Str != "secp256k1" {
			return nil, Errorf(CodeInvalidKey, "%s.crv must be \"secp256k1\"", path)
		}
	} else if crv := v.Member("crv"); crv == nil || crv.Kind != jsontree.String || crv.Str != "Ed25519" {
		return nil, Errorf(CodeInvalidKey, "%s.crv must be \"Ed25519\" for an OKP key", path)
	}
	var err *Error
	if k.x, err = coordinate(v.Member("x"), path+".x"); err != nil {
		return nil, err
	}
	if k.alg == ES256K {
		if k.y, err = coordinate(v.Member("y"), path+".y"); err != nil {
			return nil, err
		}
	}
	if !p.allows(k.alg) {
		return nil, Errorf(CodeInvalidKey, "%s: %s keys are not accepted (profile algorithms: %s)", path, keyName(k.alg), p.algorithmList())
	}
	if k.alg != headerAlg {
		return nil, Errorf(CodeKeyAlgorithmMismatch, "%s is a %s key but the JWS header says alg %q", path, keyName(k.alg), headerAlg)
	}
	k.canonical = v.AppendCanonical(nil)
	k.opens = commitmentOfCanonical(k.canonical)
	return k, nil
}

func keyName(a Algorithm) string {
	if a == EdDSA {
		return "Ed25519"
	}
	return "secp256k1"
}

func coordinate(v *jsontree.Value, path string) (string, *Error) {
	if v == nil || v.Kind != jsontree.String {
		return "", Errorf(CodeInvalidKey, "%s must be a string", path)
	}
	if len(v.Str) != coordinateLength {
		return "", Errorf(CodeInvalidKey, "%s must be %d base64url characters (32 bytes)", path, coordinateLength)
	}
	return v.Str, nil
}

// revealValue is HashOut(JCS(jwk)).
func (k *signingKey) revealValue() string { return HashOut(k.canonical) }

// commitment is the value this key opens.
func (k *signingKey) commitment() string { return k.opens }

// verify checks a JWS signature made with this key. ECDSA signatures are the 64-byte r‖s form;
// a high S is accepted (the reference implementation's jose library accepts it and the DIF
// deactivate vector has one).
func (k *signingKey) verify(signingInput string, sig []byte) *Error {
	id := verifiedID(k, signingInput, sig)
	if verified.has(id) {
		return nil
	}
	if err := k.verifyUncached(signingInput, sig); err != nil {
		return err
	}
	verified.add(id)
	return nil
}

func (k *signingKey) verifyUncached(signingInput string, sig []byte) *Error {
	if k.crv == crvP256 || k.crv == crvP384 {
		x, err := decodeBase64URL(k.x)
		if err != nil {
			return Errorf(CodeInvalidKey, "key x is not base64url")
		}
		return k.verifyNIST(x, sig, signingInput)
	}
	x, errX := decodeBase64URL(k.x)
	if errX != nil || len(x) != 32 {
		return Errorf(CodeInvalidKey, "key x is not 32 bytes of base64url")
	}
	if k.alg == EdDSA {
		if len(sig) != ed25519.SignatureSize {
			return Errorf(CodeInvalidSignature, "EdDSA signature must be %d bytes, got %d", ed25519.SignatureSize, len(sig))
		}
		if !ed25519.Verify(ed25519.PublicKey(x), []byte(signingInput), sig) {
			return Errorf(CodeInvalidSignature, "EdDSA signature does not verify with the revealed key")
		}
		return nil
	}
	y, errY := decodeBase64URL(k.y)
	if errY != nil || len(y) != 32 {
		return Errorf(CodeInvalidKey, "key y is not 32 bytes of base64url")
	}
	var raw [65]byte
	raw[0] = secp256k1.PubKeyFormatUncompressed
	copy(raw[1:33], x)
	copy(raw[33:], y)
	pub, err := secp256k1.ParsePubKey(raw[:])
	if err != nil {
		return Wrap(CodeInvalidKey, err, "key is not a secp256k1 point")
	}
	if len(sig) != 64 {
		return Errorf(CodeInvalidSignature, "ES256K signature must be 64 bytes (r||s), got %d", len(sig))
	}
	var r, s secp256k1.ModNScalar
	if r.SetByteSlice(sig[:32]) || s.SetByteSlice(sig[32:]) || r.IsZero() || s.IsZero() {
		return Errorf(CodeInvalidSignature, "ES256K signature r or s out of range")
	}
	hash := sha256.Sum256([]byte(signingInput))
	if !ecdsa.NewSignature(&r, &s).Verify(hash[:], pub) {
		return Errorf(CodeInvalidSignature, "ES256K signature does not verify with the revealed key")
	}
	return nil
}

// verified remembers signatures that verified. Resolution verifies every signed operation of a
// DID each time the DID's history changes (and intake verifies each new operation once more
// before that), so without it a DID's n-th operation costs n verifications; with it, one. An
// ES256K verification is ~100,000 times the cost of the lookup. Only successes are kept, under a
// hash of everything the verification depends on, so a hit answers exactly what a verification
// would.
var verified = verifiedSet{m: make(map[[sha256.Size]byte]struct{})}

// verifiedSetSize bounds the set (about 64 bytes an entry): a DID whose signatures were evicted
// is merely verified again.
const verifiedSetSize = 1 << 17

type verifiedSet struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]struct{}
}

func (s *verifiedSet) has(id [sha256.Size]byte) bool {
	s.mu.Lock()
	_, ok := s.m[id]
	s.mu.Unlock()
	return ok
}

func (s *verifiedSet) add(id [sha256.Size]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= verifiedSetSize {
		for k := range s.m { // evict an arbitrary entry: bounded memory, no bookkeeping
			delete(s.m, k)
			break
		}
	}
	s.m[id] = struct{}{}
}

// verifiedID hashes the key, the signing input and the signature, each length-prefixed so that no
// two different triples share an encoding.
func verifiedID(k *signingKey, signingInput string, sig []byte) [sha256.Size]byte {
	h := sha256.New()
	var n [4]byte
	for _, part := range [][]byte{[]byte(k.alg), []byte(k.crv), []byte(k.x), []byte(k.y), []byte(signingInput), sig} {
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var id [sha256.Size]byte
	h.Sum(id[:0])
	return id
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
