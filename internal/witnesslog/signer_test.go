package witnesslog

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
)

func TestOriginFor(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		endpoint, want string
	}{
		{"https://a.example", "a.example/log"},
		{"https://A.Example:8443/", "a.example:8443/log"},
		{"http://127.0.0.1:48080", "127.0.0.1:48080/log"},
		{"https://b.example/anchord", "b.example/anchord/log"},
	} {
		got, err := OriginFor(tt.endpoint)
		require.NoError(t, err, tt.endpoint)
		require.Equal(t, tt.want, got, tt.endpoint)
	}
	for _, bad := range []string{"", "a.example", "https://", "https://a.example/x+y", "://"} {
		_, err := OriginFor(bad)
		require.Error(t, err, bad)
	}
}

func TestSignerAndVerifierKeyAgree(t *testing.T) {
	t.Parallel()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := newSigner(testOrigin, key)
	require.NoError(t, err)
	vkey, err := VerifierKey(testOrigin, pub)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(vkey, testOrigin+"+"), vkey)
	v, err := note.NewVerifier(vkey)
	require.NoError(t, err)

	signed, err := note.Sign(&note.Note{Text: "a.example:8443/log\n1\nAAAA\n"}, s)
	require.NoError(t, err)
	n, err := note.Open(signed, note.VerifierList(v))
	require.NoError(t, err)
	require.Len(t, n.Sigs, 1)
	require.Equal(t, v.KeyHash(), n.Sigs[0].Hash)

	_, err = VerifierKey(testOrigin, pub[:31])
	require.Error(t, err)
	_, err = VerifierKey("with space", pub)
	require.Error(t, err)
}
