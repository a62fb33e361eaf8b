package sidetree

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/sha512"
	"math/big"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// JWK curves of Orb's key algorithms.
const (
	crvEd25519   = "Ed25519"
	crvP256      = "P-256"
	crvP384      = "P-384"
	crvSecp256k1 = "secp256k1"
)

// orbNonceSize is the decoded size of a JWK's optional nonce (Orb's NonceSize).
const orbNonceSize = 16

// orbCurve describes a key algorithm Orb's v1.0 protocol accepts.
type orbCurve struct {
	kty  string
	alg  Algorithm // what Orb's own clients put in the header for it
	size int       // coordinate bytes
}

var orbCurves = map[string]orbCurve{
	crvEd25519:   {kty: "OKP", alg: EdDSA, size: 32},
	crvP256:      {kty: "EC", alg: ES256, size: 32},
	crvP384:      {kty: "EC", alg: ES256, size: 48},
	crvSecp256k1: {kty: "EC", alg: ES256K, size: 32},
}

// parseOrbSigningKey reads an update or recovery key as Orb does (sidetree-go's JWK and its
// validateSigningKey): kty, crv and x required, y for EC keys, an optional nonce of 16 bytes;
// crv one of Ed25519, P-256, P-384, secp256k1. Reveal values and commitments hash Orb's JWK
// struct, JCS({crv, kty, nonce if any, x, y}) with y "" for an Ed25519 key, whatever members the
// client sent: a client of Orb computes them that way. Beyond Orb, members other than those five
// are refused (Orb drops them silently, so they would not be part of what was committed to),
// coordinates must have their curve's length, and the key must be a point of its curve.
//
// The JWS header's alg is not matched against the key: Orb verifies by the key's curve, and its
// client signs P-256 and P-384 keys alike under "ES256". The header only has to name one of the
// profile's algorithms (parseCompactJWS).
func parseOrbSigningKey(v *jsontree.Value, path string) (*signingKey, *Error) {
	for _, m := range v.Members {
		switch m.Name {
		case "kty", "crv", "x", "y", "nonce":
		default:
			return nil, Errorf(CodeInvalidKey, "%s: member %s is not allowed in a signing JWK", path, jsontree.QuoteExcerpt(m.Name))
		}
	}
	str := func(name string) (string, *Error) {
		m := v.Member(name)
		if m == nil {
			return "", nil
		}
		if m.Kind != jsontree.String {
			return "", Errorf(CodeInvalidKey, "%s.%s must be a string", path, name)
		}
		return m.Str, nil
	}
	var vals [5]string
	for i, name := range []string{"kty", "crv", "x", "y", "nonce"} {
		s, err := str(name)
		if err != nil {
			return nil, err
		}
		vals[i] = s
	}
	kty, crv, x, y, nonce := vals[0], vals[1], vals[2], vals[3], vals[4]
	if kty == "" || crv == "" || x == "" {
		return nil, Errorf(CodeInvalidKey, "%s: kty, crv and x are required", path)
	}
	c, ok := orbCurves[crv]
	if !ok {
		return nil, Errorf(CodeInvalidKey, "%s: key algorithm %s is not in the allowed list [Ed25519 P-256 P-384 secp256k1]", path, jsontree.QuoteExcerpt(crv))
	}
	if kty != c.kty {
		return nil, Errorf(CodeInvalidKey, "%s.kty must be %q for a %s key", path, c.kty, crv)
	}
	if err := orbCoordinate(x, c.size, path+".x"); err != nil {
		return nil, err
	}
	if c.kty == "EC" {
		if err := orbCoordinate(y, c.size, path+".y"); err != nil {
			return nil, err
		}
	} else if y != "" {
		return nil, Errorf(CodeInvalidKey, "%s.y must be empty or absent for an Ed25519 key", path)
	}
	if nonce != "" {
		if raw, err := decodeBase64URLStrict(nonce); err != nil || len(raw) != orbNonceSize {
			return nil, Errorf(CodeInvalidKey, "%s.nonce must be %d bytes of base64url", path, orbNonceSize)
		}
	}
	canonical := make([]byte, 0, 64+len(x)+len(y)+len(nonce))
	canonical = append(canonical, `{"crv":`...)
	canonical = jsontree.AppendQuoted(canonical, crv)
	canonical = append(canonical, `,"kty":`...)
	canonical = jsontree.AppendQuoted(canonical, kty)
	if nonce != "" {
		canonical = append(canonical, `,"nonce":`...)
		canonical = jsontree.AppendQuoted(canonical, nonce)
	}
	canonical = append(canonical, `,"x":`...)
	canonical = jsontree.AppendQuoted(canonical, x)
	canonical = append(canonical, `,"y":`...)
	canonical = jsontree.AppendQuoted(canonical, y)
	canonical = append(canonical, '}')
	k := &signingKey{alg: c.alg, crv: crv, canonical: canonical, x: x, y: y}
	k.opens = commitmentOfCanonical(canonical)
	return k, nil
}

func orbCoordinate(s string, size int, path string) *Error {
	raw, err := decodeBase64URLStrict(s)
	if err != nil || len(raw) != size {
		return Errorf(CodeInvalidKey, "%s must be %d bytes of base64url", path, size)
	}
	return nil
}

// verifyNIST verifies an ES256 (P-256, SHA-256) or P-384 (SHA-384) signature in the r‖s form,
// as Orb's verifier does for those curves. x is the decoded x coordinate.
func (k *signingKey) verifyNIST(x, sig []byte, signingInput string) *Error {
	curve, size := elliptic.P256(), 32
	if k.crv == crvP384 {
		curve, size = elliptic.P384(), 48
	}
	y, err := decodeBase64URL(k.y)
	if err != nil || len(y) != size || len(x) != size {
		return Errorf(CodeInvalidKey, "%s key coordinates must be %d bytes", k.crv, size)
	}
	point := make([]byte, 0, 1+2*size)
	point = append(append(append(point, 4), x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
	if err != nil {
		return Wrap(CodeInvalidKey, err, "key is not a %s point", k.crv)
	}
	if len(sig) != 2*size {
		return Errorf(CodeInvalidSignature, "%s signature must be %d bytes (r||s), got %d", k.crv, 2*size, len(sig))
	}
	var digest []byte
	if k.crv == crvP384 {
		d := sha512.Sum384([]byte(signingInput))
		digest = d[:]
	} else {
		d := sha256.Sum256([]byte(signingInput))
		digest = d[:]
	}
	r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
	if !ecdsa.Verify(pub, digest, r, s) {
		return Errorf(CodeInvalidSignature, "%s signature does not verify with the revealed key", k.crv)
	}
	return nil
}
