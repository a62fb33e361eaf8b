package witnesslog

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/mod/sumdb/note"
)

// OriginFor returns the origin of the log of the domain whose external endpoint is endpoint:
// the endpoint's host (and port, and path if it has one) followed by "/log", without a scheme,
// as the checkpoint format recommends — "https://a.example:8443" gives "a.example:8443/log".
// The origin is also the name of the log's verifier key.
func OriginFor(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("log origin of %q: %w", endpoint, err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("log origin of %q: the endpoint has no host", endpoint)
	}
	origin := strings.ToLower(u.Host) + strings.TrimSuffix(u.EscapedPath(), "/") + "/log"
	if err := validOrigin(origin); err != nil {
		return "", fmt.Errorf("log origin of %q: %w", endpoint, err)
	}
	return origin, nil
}

// validOrigin applies the signed-note rules for a key name, which the origin is: non-empty,
// no whitespace, no '+'.
func validOrigin(origin string) error {
	if origin == "" {
		return errors.New("witnesslog: the log origin is empty")
	}
	if strings.ContainsRune(origin, '+') || strings.ContainsFunc(origin, unicode.IsSpace) ||
		strings.ContainsFunc(origin, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("witnesslog: the log origin %q contains '+', a space or a control character", origin)
	}
	return nil
}

// VerifierKey returns the signed-note verifier key ("<origin>+<key hash>+<key>") of the log
// named origin whose checkpoints pub verifies; a domain can publish it, and a monitor can check
// it against the actor's publicKey.
func VerifierKey(origin string, pub ed25519.PublicKey) (string, error) {
	if err := validOrigin(origin); err != nil {
		return "", err
	}
	if len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("witnesslog: the public key must be %d bytes, got %d", ed25519.PublicKeySize, len(pub))
	}
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return "", fmt.Errorf("verifier key of %s: %w", origin, err)
	}
	return vkey, nil
}

// newVerifier returns the note verifier of the log named origin with key pub.
func newVerifier(origin string, pub ed25519.PublicKey) (note.Verifier, error) {
	vkey, err := VerifierKey(origin, pub)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("verifier of %s: %w", origin, err)
	}
	return v, nil
}

// signer signs checkpoints with the domain key. It is built from the key itself rather than
// from a signed-note private key string because the domain key is held as an
// ed25519.PrivateKey; the key hash comes from the verifier so the two cannot disagree.
type signer struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

func newSigner(origin string, key ed25519.PrivateKey) (*signer, error) {
	v, err := newVerifier(origin, key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &signer{name: origin, hash: v.KeyHash(), key: key}, nil
}

func (s *signer) Name() string                    { return s.name }
func (s *signer) KeyHash() uint32                 { return s.hash }
func (s *signer) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }
