package sawtooth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// Signer signs Sawtooth headers with one secp256k1 key, the way the Sawtooth signing libraries
// do: ECDSA over the SHA-256 of the message, the signature as 64 bytes r‖s (each big-endian,
// 32 bytes), lower-case hex; S is always in the lower half of the group order, as libsecp256k1
// requires. Signatures are deterministic (RFC 6979), so the same key and message always yield
// the same signature.
//
// A Signer never prints its private key: String and LogValue show the public key only.
type Signer struct {
	key    *secp256k1.PrivateKey
	public string
}

// NewSigner returns a Signer for a hex-encoded 32-byte private key, the format of a Sawtooth
// .priv key file (surrounding white space is ignored).
func NewSigner(privateKeyHex string) (*Signer, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(privateKeyHex))
	if err != nil {
		return nil, fmt.Errorf("parse signer key: not hex: %w", err)
	}
	if len(raw) != secp256k1.PrivKeyBytesLen {
		return nil, fmt.Errorf("parse signer key: %d bytes, want %d", len(raw), secp256k1.PrivKeyBytesLen)
	}
	var scalar secp256k1.ModNScalar
	if overflow := scalar.SetByteSlice(raw); overflow || scalar.IsZero() {
		return nil, errors.New("parse signer key: not in [1, n-1] for secp256k1")
	}
	key := secp256k1.NewPrivateKey(&scalar)
	return &Signer{key: key, public: hex.EncodeToString(key.PubKey().SerializeCompressed())}, nil
}

// GenerateKey returns a new random private key as 64 lower-case hex characters, ready for
// NewSigner and for the signer key setting.
func GenerateKey() (string, error) {
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return "", fmt.Errorf("generate signer key: %w", err)
	}
	b := key.Key.Bytes()
	return hex.EncodeToString(b[:]), nil
}

// PublicKey returns the compressed public key (33 bytes) as lower-case hex, the form Sawtooth
// headers carry in signer_public_key and batcher_public_key.
func (s *Signer) PublicKey() string { return s.public }

// Sign returns the hex r‖s signature of SHA-256(message).
func (s *Signer) Sign(message []byte) string {
	digest := sha256.Sum256(message)
	sig := ecdsa.Sign(s.key, digest[:])
	var out [64]byte
	r, ss := sig.R(), sig.S()
	r.PutBytesUnchecked(out[:32])
	ss.PutBytesUnchecked(out[32:])
	return hex.EncodeToString(out[:])
}

// String shows the public key only.
func (s *Signer) String() string { return "sawtooth signer " + s.public }

// LogValue shows the public key only.
func (s *Signer) LogValue() slog.Value { return slog.StringValue(s.public) }

// VerifySignature checks a Sawtooth signature: signatureHex must be 128 lower-case hex
// characters encoding r‖s with 1 ≤ r, s < n and s in the lower half of n (libsecp256k1 refuses
// the upper half), publicKeyHex a compressed or uncompressed secp256k1 key in hex, and the
// signature must be valid for SHA-256(message).
func VerifySignature(publicKeyHex, signatureHex string, message []byte) error {
	pubRaw, err := hex.DecodeString(publicKeyHex)
	if err != nil {
		return fmt.Errorf("public key is not hex: %w", err)
	}
	pub, err := secp256k1.ParsePubKey(pubRaw)
	if err != nil {
		return fmt.Errorf("public key: %w", err)
	}
	if !IsID(signatureHex) {
		return errors.New("signature is not 128 lower-case hex characters")
	}
	raw, err := hex.DecodeString(signatureHex)
	if err != nil {
		return fmt.Errorf("signature is not hex: %w", err)
	}
	var r, s secp256k1.ModNScalar
	if overflow := r.SetByteSlice(raw[:32]); overflow || r.IsZero() {
		return errors.New("signature r is out of range")
	}
	if overflow := s.SetByteSlice(raw[32:]); overflow || s.IsZero() {
		return errors.New("signature s is out of range")
	}
	if s.IsOverHalfOrder() {
		return errors.New("signature s is not normalized to the lower half of the group order")
	}
	digest := sha256.Sum256(message)
	if !ecdsa.NewSignature(&r, &s).Verify(digest[:], pub) {
		return errors.New("signature does not match the header and public key")
	}
	return nil
}

// IsID reports whether s has the form of a Sawtooth header signature (a batch or transaction
// id): exactly 128 lower-case hex characters. The Sawtooth REST API refuses other ids with 400.
func IsID(s string) bool {
	if len(s) != 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
