package httpsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPublicKeyPEM(t *testing.T) {
	t.Parallel()

	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey)

	t.Run("Orb form", func(t *testing.T) {
		t.Parallel()
		s, err := EncodePublicKeyPEM(pub)
		require.NoError(t, err)
		// Orb's publicKeyPem: type Ed25519, body the raw 32 bytes.
		require.Equal(t, "-----BEGIN Ed25519-----\n"+base64.StdEncoding.EncodeToString(pub)+"\n-----END Ed25519-----\n", s)
		got, err := DecodePublicKeyPEM(s)
		require.NoError(t, err)
		require.Equal(t, pub, got)
	})

	t.Run("SPKI accepted", func(t *testing.T) {
		t.Parallel()
		der, err := x509.MarshalPKIXPublicKey(pub)
		require.NoError(t, err)
		got, err := DecodePublicKeyPEM(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))
		require.NoError(t, err)
		require.Equal(t, pub, got)
	})

	t.Run("encode refuses a short key", func(t *testing.T) {
		t.Parallel()
		_, err := EncodePublicKeyPEM(pub[:31])
		require.Error(t, err)
	})

	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKIXPublicKey(&ecKey.PublicKey)
	require.NoError(t, err)
	orb, err := EncodePublicKeyPEM(pub)
	require.NoError(t, err)

	rejects := []struct {
		name string
		pem  string
	}{
		{"empty", ""},
		{"not PEM", "hello"},
		{"short raw key", string(pem.EncodeToMemory(&pem.Block{Type: "Ed25519", Bytes: pub[:31]}))},
		{"long raw key", string(pem.EncodeToMemory(&pem.Block{Type: "Ed25519", Bytes: append(bytes.Clone(pub), 0)}))},
		{"P-256 SPKI", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER}))},
		{"garbage SPKI", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}))},
		{"P-256 block type", string(pem.EncodeToMemory(&pem.Block{Type: "P-256", Bytes: pub}))},
		{"lower-case type", string(pem.EncodeToMemory(&pem.Block{Type: "ed25519", Bytes: pub}))},
		{"headers", string(pem.EncodeToMemory(&pem.Block{Type: "Ed25519", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: pub}))},
		{"two blocks", orb + orb},
		{"trailing text", orb + "x"},
		{"too long", orb + strings.Repeat(" ", maxPEMBytes)},
	}
	for _, tt := range rejects {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodePublicKeyPEM(tt.pem)
			require.Error(t, err)
		})
	}
}
