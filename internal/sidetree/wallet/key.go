package wallet

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/anchord/anchord/internal/sidetree"
)

// Key is an update or recovery key pair. It is immutable and safe for concurrent use.
type Key struct {
	alg       sidetree.Algorithm
	k1        *secp256k1.PrivateKey
	ed        ed25519.PrivateKey
	jwk       []byte // public JWK, members in the order kty, crv, x[, y]
	reveal    string
	commit    string
	jwsHeader string // base64url of {"alg":"…"}
}

// GenerateKey makes a new key pair for alg (ES256K or EdDSA). rand nil means crypto/rand.
func GenerateKey(alg sidetree.Algorithm, random io.Reader) (*Key, error) {
	if random == nil {
		random = rand.Reader
	}
	switch alg {
	case sidetree.ES256K:
		priv, err := secp256k1.GeneratePrivateKeyFromRand(random)
		if err != nil {
			return nil, fmt.Errorf("generate secp256k1 key: %w", err)
		}
		return newK1(priv), nil
	case sidetree.EdDSA:
		_, priv, err := ed25519.GenerateKey(random)
		if err != nil {
			return nil, fmt.Errorf("generate ed25519 key: %w", err)
		}
		return newEd(priv), nil
	default:
		return nil, fmt.Errorf("generate key: unsupported algorithm %q", alg)
	}
}

// KeyFromJWK loads a private key JWK: {"kty":"EC","crv":"secp256k1","d",…} or
// {"kty":"OKP","crv":"Ed25519","d",…}. The public members, if present, must match d.
func KeyFromJWK(privateJWK []byte) (*Key, error) {
	var j struct{ Kty, Crv, D, X, Y string }
	if err := json.Unmarshal(privateJWK, &j); err != nil {
		return nil, fmt.Errorf("load key: %w", err)
	}
	d, err := base64.RawURLEncoding.DecodeString(j.D)
	if err != nil || len(d) != 32 {
		return nil, errors.New("load key: d must be 32 bytes of base64url")
	}
	var k *Key
	switch {
	case j.Kty == "EC" && j.Crv == "secp256k1":
		k = newK1(secp256k1.PrivKeyFromBytes(d))
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		k = newEd(ed25519.NewKeyFromSeed(d))
	default:
		return nil, fmt.Errorf("load key: unsupported kty/crv %q/%q", j.Kty, j.Crv)
	}
	var pub struct{ X, Y string }
	_ = json.Unmarshal(k.jwk, &pub)
	if (j.X != "" && j.X != pub.X) || (j.Y != "" && j.Y != pub.Y) {
		return nil, errors.New("load key: public members do not match d")
	}
	return k, nil
}

func newK1(priv *secp256k1.PrivateKey) *Key {
	raw := priv.PubKey().SerializeUncompressed() // 0x04 ‖ x ‖ y
	x, y := raw[1:33], raw[33:65]
	jwk := fmt.Appendf(nil, `{"kty":"EC","crv":"secp256k1","x":"%s","y":"%s"}`, base64.RawURLEncoding.EncodeToString(x), base64.RawURLEncoding.EncodeToString(y))
	return finish(&Key{alg: sidetree.ES256K, k1: priv, jwk: jwk})
}

func newEd(priv ed25519.PrivateKey) *Key {
	pub := priv.Public().(ed25519.PublicKey)
	jwk := fmt.Appendf(nil, `{"kty":"OKP","crv":"Ed25519","x":"%s"}`, base64.RawURLEncoding.EncodeToString(pub))
	return finish(&Key{alg: sidetree.EdDSA, ed: priv, jwk: jwk})
}

func finish(k *Key) *Key {
	// Both calls only fail on malformed JSON, and the JWK above is well formed.
	k.reveal, _ = sidetree.RevealValue(k.jwk)
	k.commit, _ = sidetree.Commitment(k.jwk)
	k.jwsHeader = base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"alg":"%s"}`, k.alg))
	return k
}

// Algorithm returns the key's JWS algorithm.
func (k *Key) Algorithm() sidetree.Algorithm { return k.alg }

// PublicJWK returns the public key as a JWK (JSON).
func (k *Key) PublicJWK() []byte { return k.jwk }

// RevealValue returns HashOut(JCS(public JWK)).
func (k *Key) RevealValue() string { return k.reveal }

// Commitment returns the commitment that this key opens.
func (k *Key) Commitment() string { return k.commit }

// Sign returns the compact JWS of payload with header {"alg":…}. ES256K signatures are RFC 6979
// deterministic and low-S.
func (k *Key) Sign(payload []byte) string {
	enc := make([]byte, 0, len(k.jwsHeader)+1+base64.RawURLEncoding.EncodedLen(len(payload))+1+86)
	enc = append(enc, k.jwsHeader...)
	enc = append(enc, '.')
	enc = base64.RawURLEncoding.AppendEncode(enc, payload)
	var sig []byte
	if k.alg == sidetree.EdDSA {
		sig = ed25519.Sign(k.ed, enc)
	} else {
		hash := sha256.Sum256(enc)
		s := ecdsa.Sign(k.k1, hash[:])
		r, sv := s.R(), s.S()
		rb, sb := r.Bytes(), sv.Bytes()
		sig = append(rb[:], sb[:]...)
	}
	enc = append(enc, '.')
	enc = base64.RawURLEncoding.AppendEncode(enc, sig)
	return string(enc)
}
