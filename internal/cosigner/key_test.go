package cosigner

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/circl/sign/mldsa/mldsa44"
	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// The example of c2sp.org/tlog-cosignature: a checkpoint, its cosignature/v1 signed message,
// and a cosignature line whose timestamp is the message's.
const (
	specCheckpoint = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
	specMessage    = "cosignature/v1\ntime 1679315147\n" + specCheckpoint
	specCosigLine  = "— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA=="
)

func testKey(t testing.TB, withMLDSA bool) *Key {
	t.Helper()
	_, domain, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	k, err := DeriveKey("witness.example/w1", domain, withMLDSA)
	require.NoError(t, err)
	return k
}

func TestCosignatureV1MessageIsTheSpecExample(t *testing.T) {
	t.Parallel()
	require.Equal(t, specMessage, string(CosignatureV1Message(1679315147, []byte(specCheckpoint))))

	// The example's cosignature carries that timestamp, as a third-party parser reads it.
	name, b64, ok := strings.Cut(strings.TrimPrefix(specCosigLine, "— "), " ")
	require.True(t, ok)
	ts, err := fnote.CoSigV1Timestamp(note.Signature{Name: name, Base64: b64})
	require.NoError(t, err)
	require.Equal(t, int64(1679315147), ts.Unix())
}

func TestEd25519CosignaturesVerifyWithTheStandardVerifier(t *testing.T) {
	t.Parallel()
	k := testKey(t, false)
	require.Len(t, k.VerifierKeys(), 1)
	v, err := fnote.NewVerifierForCosignatureV1(k.VerifierKeys()[0])
	require.NoError(t, err)

	at := time.Unix(1679315147, 0)
	signed, err := note.Sign(&note.Note{Text: specCheckpoint}, k.Signers(at)...)
	require.NoError(t, err)
	n, err := note.Open(signed, note.VerifierList(v))
	require.NoError(t, err)
	require.Len(t, n.Sigs, 1)
	ts, err := fnote.CoSigV1Timestamp(n.Sigs[0])
	require.NoError(t, err)
	require.Equal(t, at.Unix(), ts.Unix())

	// Extension lines are part of what is cosigned.
	ext := specCheckpoint + "extension line\n"
	signed, err = note.Sign(&note.Note{Text: ext}, k.Signers(at)...)
	require.NoError(t, err)
	_, err = note.Open(signed, note.VerifierList(v))
	require.NoError(t, err)
	tampered := strings.Replace(string(signed), "extension line", "extension LINE", 1)
	_, err = note.Open([]byte(tampered), note.VerifierList(v))
	require.Error(t, err)
}

func TestKeysAreDerivedPerDomainAndPurpose(t *testing.T) {
	t.Parallel()
	_, domain, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	a, err := DeriveKey("w.example/a", domain, true)
	require.NoError(t, err)
	b, err := DeriveKey("w.example/a", domain, true)
	require.NoError(t, err)
	require.Equal(t, a.VerifierKeys(), b.VerifierKeys(), "every instance of a domain derives the same keys")
	require.NotEqual(t, domain.Public(), a.ed.Public(), "the domain key never cosigns")

	_, other, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	c, err := DeriveKey("w.example/a", other, true)
	require.NoError(t, err)
	require.NotEqual(t, a.VerifierKeys(), c.VerifierKeys())

	for _, bad := range []string{"", "has space", "a+b"} {
		_, err := DeriveKey(bad, domain, false)
		require.Error(t, err, bad)
	}
}

// TestMLDSA44CosignaturesFollowTheSpec checks a subtree/v1 cosignature with circl's ML-DSA-44
// over a cosigned_message the test writes from tlog-cosignature itself.
func TestMLDSA44CosignaturesFollowTheSpec(t *testing.T) {
	t.Parallel()
	k := testKey(t, true)
	keys := k.VerifierKeys()
	require.Len(t, keys, 2)

	// The vkey: name+keyID+base64(0x06 || 1312-byte key), the key ID per the spec.
	parts := strings.SplitN(keys[1], "+", 3)
	require.Equal(t, k.Name(), parts[0])
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	require.NoError(t, err)
	require.Equal(t, byte(0x06), raw[0])
	require.Len(t, raw[1:], mldsa44.PublicKeySize)
	id := sha256.Sum256(append([]byte(k.Name()+"\n"), raw...))
	require.Equal(t, fmt.Sprintf("%08x", binary.BigEndian.Uint32(id[:4])), parts[1])
	var pub mldsa44.PublicKey
	require.NoError(t, pub.UnmarshalBinary(raw[1:]))

	at := time.Unix(1679315147, 0)
	signed, err := note.Sign(&note.Note{Text: specCheckpoint}, k.Signers(at)...)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(signed), "\n"), "\n")
	name, b64, ok := strings.Cut(strings.TrimPrefix(lines[len(lines)-1], "— "), " ")
	require.True(t, ok)
	require.Equal(t, k.Name(), name)
	sig, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	require.Len(t, sig, 4+8+mldsa44.SignatureSize)
	require.Equal(t, parts[1], fmt.Sprintf("%08x", binary.BigEndian.Uint32(sig[:4])))
	require.Equal(t, uint64(at.Unix()), binary.BigEndian.Uint64(sig[4:12]))

	root, err := base64.StdEncoding.DecodeString("CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=")
	require.NoError(t, err)
	msg := []byte("subtree/v1\n\x00")
	msg = append(msg, byte(len(k.Name())))
	msg = append(msg, k.Name()...)
	msg = binary.BigEndian.AppendUint64(msg, uint64(at.Unix()))
	msg = append(msg, byte(len("example.com/behind-the-sofa")))
	msg = append(msg, "example.com/behind-the-sofa"...)
	msg = binary.BigEndian.AppendUint64(msg, 0)
	msg = binary.BigEndian.AppendUint64(msg, 20852163)
	msg = append(msg, root...)
	require.True(t, mldsa44.Verify(&pub, msg, nil, sig[12:]), "the ML-DSA-44 signature verifies over the spec's cosigned_message")

	mine, err := SubtreeV1Message(k.Name(), uint64(at.Unix()), "example.com/behind-the-sofa", 0, 20852163, root)
	require.NoError(t, err)
	require.Equal(t, msg, mine)
	_, err = SubtreeV1Message(k.Name(), 1, "o", 3, 5, root)
	require.Error(t, err, "a subtree not starting at 0 has no timestamp")
}
