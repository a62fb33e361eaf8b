package sawtooth_test

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// testKey is a fixed private key for tests; never used outside them.
const testKey = "8f1a3c2e9b7d6f5e4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c"

func TestNewSigner(t *testing.T) {
	t.Parallel()

	// n, the order of secp256k1.
	const n = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
	for name, tc := range map[string]struct {
		key     string
		wantErr string
	}{
		"valid":               {key: testKey},
		"valid with newline":  {key: testKey + "\n"},
		"upper case":          {key: strings.ToUpper(testKey)},
		"not hex":             {key: "zz" + testKey[2:], wantErr: "not hex"},
		"short":               {key: testKey[:62], wantErr: "31 bytes"},
		"long":                {key: testKey + "00", wantErr: "33 bytes"},
		"zero":                {key: strings.Repeat("0", 64), wantErr: "not in [1, n-1]"},
		"order":               {key: n, wantErr: "not in [1, n-1]"},
		"above order":         {key: n[:63] + "2", wantErr: "not in [1, n-1]"},
		"largest valid (n-1)": {key: n[:63] + "0"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := sawtooth.NewSigner(tc.key)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, s.PublicKey(), 66)
			require.Contains(t, []string{"02", "03"}, s.PublicKey()[:2])
		})
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()

	a, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	b, err := sawtooth.GenerateKey()
	require.NoError(t, err)
	require.Len(t, a, 64)
	require.NotEqual(t, a, b)
	s, err := sawtooth.NewSigner(a)
	require.NoError(t, err)
	require.NoError(t, sawtooth.VerifySignature(s.PublicKey(), s.Sign([]byte("m")), []byte("m")))
}

func TestSignerDoesNotPrintItsKey(t *testing.T) {
	t.Parallel()

	s, err := sawtooth.NewSigner(testKey)
	require.NoError(t, err)
	var buf strings.Builder
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "signer", s)
	for _, out := range []string{buf.String(), s.String(), fmt.Sprint(s), fmt.Sprintf("%v %+v", s, s)} {
		require.NotContains(t, out, testKey)
	}
	require.Contains(t, buf.String(), s.PublicKey())
}

func TestSignAndVerify(t *testing.T) {
	t.Parallel()

	s, err := sawtooth.NewSigner(testKey)
	require.NoError(t, err)
	other, err := sawtooth.NewSigner(strings.Repeat("1", 64))
	require.NoError(t, err)
	msg := []byte("a serialized header")
	sig := s.Sign(msg)

	require.True(t, sawtooth.IsID(sig), "signature must be 128 lower-case hex: %s", sig)
	require.Equal(t, sig, s.Sign(msg), "RFC 6979 signatures are deterministic")
	require.NoError(t, sawtooth.VerifySignature(s.PublicKey(), sig, msg))

	// The uncompressed form of the same key verifies too (Sawtooth accepts both).
	require.NoError(t, sawtooth.VerifySignature(uncompressed(t, s.PublicKey()), sig, msg))

	raw, err := hex.DecodeString(sig)
	require.NoError(t, err)
	// High-S twin: (r, n-s) is a valid ECDSA signature that libsecp256k1 refuses.
	nOrder, _ := new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	highS := new(big.Int).Sub(nOrder, new(big.Int).SetBytes(raw[32:]))
	twin := hex.EncodeToString(raw[:32]) + hex.EncodeToString(highS.FillBytes(make([]byte, 32)))

	for name, tc := range map[string]struct {
		pub, sig string
		msg      []byte
		wantErr  string
	}{
		"other message":   {s.PublicKey(), sig, []byte("another header"), "does not match"},
		"other key":       {other.PublicKey(), sig, msg, "does not match"},
		"upper-case hex":  {s.PublicKey(), strings.ToUpper(sig), msg, "lower-case hex"},
		"short":           {s.PublicKey(), sig[:126], msg, "lower-case hex"},
		"high S":          {s.PublicKey(), twin, msg, "lower half"},
		"zero r":          {s.PublicKey(), strings.Repeat("0", 64) + sig[64:], msg, "r is out of range"},
		"r above order":   {s.PublicKey(), strings.Repeat("f", 64) + sig[64:], msg, "r is out of range"},
		"bad public key":  {"02" + strings.Repeat("0", 64), sig, msg, "public key"},
		"public key text": {"key", sig, msg, "not hex"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.ErrorContains(t, sawtooth.VerifySignature(tc.pub, tc.sig, tc.msg), tc.wantErr)
		})
	}
}

func TestIsID(t *testing.T) {
	t.Parallel()

	require.True(t, sawtooth.IsID(strings.Repeat("a1", 64)))
	require.False(t, sawtooth.IsID(strings.Repeat("A1", 64)))
	require.False(t, sawtooth.IsID(strings.Repeat("a1", 63)))
	require.False(t, sawtooth.IsID(strings.Repeat("g1", 64)))
	require.False(t, sawtooth.IsID(""))
}

// uncompressed expands a compressed public key with the curve equation y² = x³ + 7.
func uncompressed(t *testing.T, compressedHex string) string {
	t.Helper()
	x, y := decompress(t, compressedHex)
	return "04" + hex.EncodeToString(x.FillBytes(make([]byte, 32))) + hex.EncodeToString(y.FillBytes(make([]byte, 32)))
}
