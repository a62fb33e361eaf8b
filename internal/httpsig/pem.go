package httpsig

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// PEM block types of public keys.
const (
	// pemTypeEd25519 is Orb's block type: its body is the raw 32-byte key, not SPKI.
	pemTypeEd25519 = "Ed25519"
	// pemTypeSPKI is the standard block type, which Orb refuses but we read.
	pemTypeSPKI = "PUBLIC KEY"
)

// EncodePublicKeyPEM returns key as Orb publishes it in an actor's publicKeyPem: a PEM block of
// type "Ed25519" holding the raw key bytes. Orb refuses the standard SPKI "PUBLIC KEY" form, so
// this is the only form we publish.
func EncodePublicKeyPEM(key ed25519.PublicKey) (string, error) {
	if len(key) != ed25519.PublicKeySize {
		return "", fmt.Errorf("encode public key: %d bytes, want %d", len(key), ed25519.PublicKeySize)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: pemTypeEd25519, Bytes: key})), nil
}

// DecodePublicKeyPEM reads a publicKeyPem. It takes Orb's "Ed25519" block of raw key bytes and,
// to be liberal in what we accept from other ActivityPub software, a standard SPKI "PUBLIC KEY"
// block holding an Ed25519 key. Anything else is refused: other key types, PEM headers, more
// than one block, or more than a few kilobytes of input.
func DecodePublicKeyPEM(s string) (ed25519.PublicKey, error) {
	if len(s) > maxPEMBytes {
		return nil, fmt.Errorf("decode public key: longer than %d bytes", maxPEMBytes)
	}
	block, rest := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("decode public key: no PEM block")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, errors.New("decode public key: data after the PEM block")
	}
	if len(block.Headers) != 0 {
		return nil, errors.New("decode public key: PEM block has headers")
	}
	switch block.Type {
	case pemTypeEd25519:
		if len(block.Bytes) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("decode public key: %s block has %d bytes, want %d",
				pemTypeEd25519, len(block.Bytes), ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(block.Bytes), nil
	case pemTypeSPKI:
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("decode public key: %w", err)
		}
		key, ok := pub.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("decode public key: %T is not an Ed25519 key", pub)
		}
		return key, nil
	default:
		return nil, fmt.Errorf("decode public key: PEM type %q is neither %s nor %s",
			block.Type, pemTypeEd25519, pemTypeSPKI)
	}
}
