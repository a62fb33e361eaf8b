package witnesslog

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
)

func TestOpenCheckpoint(t *testing.T) {
	t.Parallel()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	s, err := newSigner(testOrigin, key)
	require.NoError(t, err)
	sign := func(text string) []byte {
		signed, err := note.Sign(&note.Note{Text: text}, s)
		require.NoError(t, err)
		return signed
	}
	const root = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" // SHA-256 of nothing: the empty tree

	cp, err := OpenCheckpoint(sign(testOrigin+"\n0\n"+root+"\n"), testOrigin, pub)
	require.NoError(t, err)
	require.Equal(t, uint64(0), cp.Size)
	cp, err = OpenCheckpoint(sign(testOrigin+"\n7\n"+root+"\n"), testOrigin, pub)
	require.NoError(t, err)
	require.Equal(t, uint64(7), cp.Size)
	n, err := checkpointSize(cp.Raw)
	require.NoError(t, err)
	require.Equal(t, uint64(7), n)

	for name, raw := range map[string][]byte{
		"empty tree with another root": sign(testOrigin + "\n0\nAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\n"),
		"short root":                   sign(testOrigin + "\n7\nAAAA\n"),
		"another origin":               sign("b.example/log\n7\n" + root + "\n"),
		"size not a number":            sign(testOrigin + "\nseven\n" + root + "\n"),
		"unsigned":                     []byte(testOrigin + "\n7\n" + root + "\n\n"),
		"too large":                    sign(testOrigin + "\n7\n" + root + "\n" + strings.Repeat("x", CheckpointMaxSize) + "\n"),
		"tampered":                     bytes.Replace(sign(testOrigin+"\n7\n"+root+"\n"), []byte("\n7\n"), []byte("\n8\n"), 1),
	} {
		_, err := OpenCheckpoint(raw, testOrigin, pub)
		require.Error(t, err, name)
	}
	_, err = OpenCheckpoint(sign(testOrigin+"\n7\n"+root+"\n"), testOrigin, pub[:16])
	require.Error(t, err, "a key of the wrong size")
	_, err = checkpointSize([]byte("garbage"))
	require.Error(t, err)
}
