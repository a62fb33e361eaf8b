package sawtooth_test

// An independent check of the bytes Builder produces: a hand-written protobuf walker
// (protowire, field numbers from the public Sawtooth protos, not the generated types) and a
// from-scratch secp256k1 ECDSA verifier on math/big (not the signing library).

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// rawField is one decoded protobuf field: bytes for length-delimited fields, varint otherwise.
type rawField struct {
	num    protowire.Number
	typ    protowire.Type
	bytes  []byte
	varint uint64
}

// walk decodes every field of a message, failing on anything but varint and length-delimited.
func walk(t *testing.T, b []byte) []rawField {
	t.Helper()
	var out []rawField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.GreaterOrEqual(t, n, 0, "bad tag: %v", protowire.ParseError(n))
		b = b[n:]
		f := rawField{num: num, typ: typ}
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			require.GreaterOrEqual(t, m, 0, "bad bytes field %d", num)
			f.bytes, n = v, m
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			require.GreaterOrEqual(t, m, 0, "bad varint field %d", num)
			f.varint, n = v, m
		default:
			t.Fatalf("unexpected wire type %d for field %d", typ, num)
		}
		out = append(out, f)
		b = b[n:]
	}
	return out
}

// fieldsByNumber groups length-delimited fields by number, refusing numbers not in allowed.
func fieldsByNumber(t *testing.T, b []byte, allowed ...protowire.Number) map[protowire.Number][][]byte {
	t.Helper()
	ok := map[protowire.Number]bool{}
	for _, n := range allowed {
		ok[n] = true
	}
	out := map[protowire.Number][][]byte{}
	for _, f := range walk(t, b) {
		require.True(t, ok[f.num], "unexpected field number %d", f.num)
		require.Equal(t, protowire.BytesType, f.typ, "field %d must be length-delimited", f.num)
		out[f.num] = append(out[f.num], f.bytes)
	}
	return out
}

func one(t *testing.T, m map[protowire.Number][][]byte, n protowire.Number) string {
	t.Helper()
	require.Len(t, m[n], 1, "field %d must occur once", n)
	return string(m[n][0])
}

func TestIndependentDecode(t *testing.T) {
	t.Parallel()

	const anchor = "42.QmXyzIndependentlyDecoded"
	b := build(t, sawtooth.BuildParams{Anchor: anchor})

	// BatchList: batches = 1.
	list := fieldsByNumber(t, b.Bytes, 1)
	require.Len(t, list[1], 1, "one batch")

	// Batch: header = 1, header_signature = 2, transactions = 3 (trace = 4 absent when false).
	batch := fieldsByNumber(t, list[1][0], 1, 2, 3)
	batchHeaderBytes := []byte(one(t, batch, 1))
	batchSig := one(t, batch, 2)
	require.Len(t, batch[3], 1, "one transaction")
	require.Equal(t, b.ID, batchSig)

	// BatchHeader: signer_public_key = 1, transaction_ids = 2.
	bh := fieldsByNumber(t, batchHeaderBytes, 1, 2)
	signer := one(t, bh, 1)
	require.Equal(t, b.SignerPublicKey, signer)

	// Transaction: header = 1, header_signature = 2, payload = 3.
	txn := fieldsByNumber(t, batch[3][0], 1, 2, 3)
	txnHeaderBytes := []byte(one(t, txn, 1))
	txnSig := one(t, txn, 2)
	payload := []byte(one(t, txn, 3))
	require.Equal(t, []string{txnSig}, b.TransactionIDs)
	require.Equal(t, txnSig, one(t, bh, 2), "batch header lists the transaction id")

	// TransactionHeader: 1 batcher_public_key, 3 family_name, 4 family_version, 5 inputs,
	// 6 nonce, 7 outputs, 9 payload_sha512, 10 signer_public_key (no dependencies, no 8).
	th := fieldsByNumber(t, txnHeaderBytes, 1, 3, 4, 5, 6, 7, 9, 10)
	require.Equal(t, signer, one(t, th, 1), "batcher key is the batch signer")
	require.Equal(t, "anchord", one(t, th, 3))
	require.Equal(t, "1.0", one(t, th, 4))
	require.Equal(t, b.Nonce, one(t, th, 6))
	require.Equal(t, signer, one(t, th, 10))

	// Payload and its hash.
	require.Equal(t, anchor, string(payload))
	sum := sha512.Sum512(payload)
	require.Equal(t, hex.EncodeToString(sum[:]), one(t, th, 9))

	// Address: first 6 hex of sha512("anchord") + first 64 hex of sha512(anchor).
	famSum := sha512.Sum512([]byte("anchord"))
	wantAddr := hex.EncodeToString(famSum[:])[:6] + hex.EncodeToString(sum[:])[:64]
	require.Equal(t, wantAddr, one(t, th, 5))
	require.Equal(t, wantAddr, one(t, th, 7))

	// The public key is the one of the private key, computed here from scratch.
	x, y := decompress(t, signer)
	d, _ := new(big.Int).SetString(testKey, 16)
	px, py := scalarMult(d, curveGx, curveGy)
	require.Zero(t, x.Cmp(px))
	require.Zero(t, y.Cmp(py))

	// Both signatures verify over SHA-256 of the header bytes as carried.
	require.True(t, ecdsaVerify(t, x, y, txnHeaderBytes, txnSig), "transaction signature")
	require.True(t, ecdsaVerify(t, x, y, batchHeaderBytes, batchSig), "batch signature")
	// And a changed header does not.
	tampered := append([]byte(nil), txnHeaderBytes...)
	tampered[len(tampered)-1] ^= 1
	require.False(t, ecdsaVerify(t, x, y, tampered, txnSig))
}

// secp256k1 domain parameters (SEC 2, section 2.4.1).
var (
	curveP  = hexInt("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f")
	curveN  = hexInt("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
	curveGx = hexInt("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
	curveGy = hexInt("483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8")
)

func hexInt(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 16)
	if !ok {
		panic("bad hex constant " + s)
	}
	return v
}

// decompress recovers (x, y) from a 33-byte compressed key: y = (x³ + 7)^((p+1)/4) mod p,
// negated when its parity differs from the prefix's.
func decompress(t *testing.T, pubHex string) (*big.Int, *big.Int) {
	t.Helper()
	raw, err := hex.DecodeString(pubHex)
	require.NoError(t, err)
	require.Len(t, raw, 33)
	require.Contains(t, []byte{2, 3}, raw[0])
	x := new(big.Int).SetBytes(raw[1:])
	rhs := new(big.Int).Exp(x, big.NewInt(3), curveP)
	rhs.Add(rhs, big.NewInt(7)).Mod(rhs, curveP)
	exp := new(big.Int).Add(curveP, big.NewInt(1))
	exp.Rsh(exp, 2)
	y := new(big.Int).Exp(rhs, exp, curveP)
	require.Zero(t, new(big.Int).Exp(y, big.NewInt(2), curveP).Cmp(rhs), "x is not on the curve")
	if y.Bit(0) != uint(raw[0]&1) {
		y.Sub(curveP, y)
	}
	return x, y
}

// pointAdd adds two affine points; nil coordinates stand for the point at infinity.
func pointAdd(x1, y1, x2, y2 *big.Int) (*big.Int, *big.Int) {
	if x1 == nil {
		return x2, y2
	}
	if x2 == nil {
		return x1, y1
	}
	var lambda *big.Int
	if x1.Cmp(x2) == 0 {
		if new(big.Int).Add(y1, y2).Mod(new(big.Int).Add(y1, y2), curveP).Sign() == 0 {
			return nil, nil
		}
		// Doubling: λ = 3x² / 2y.
		num := new(big.Int).Mul(x1, x1)
		num.Mul(num, big.NewInt(3))
		den := new(big.Int).Lsh(y1, 1)
		lambda = num.Mul(num, den.ModInverse(den.Mod(den, curveP), curveP))
	} else {
		num := new(big.Int).Sub(y2, y1)
		den := new(big.Int).Sub(x2, x1)
		den.Mod(den, curveP)
		lambda = num.Mul(num, den.ModInverse(den, curveP))
	}
	lambda.Mod(lambda, curveP)
	x3 := new(big.Int).Mul(lambda, lambda)
	x3.Sub(x3, x1).Sub(x3, x2).Mod(x3, curveP)
	y3 := new(big.Int).Sub(x1, x3)
	y3.Mul(y3, lambda).Sub(y3, y1).Mod(y3, curveP)
	return x3, y3
}

func scalarMult(k, x, y *big.Int) (*big.Int, *big.Int) {
	var rx, ry *big.Int
	for i := k.BitLen() - 1; i >= 0; i-- {
		rx, ry = pointAdd(rx, ry, rx, ry)
		if k.Bit(i) == 1 {
			rx, ry = pointAdd(rx, ry, x, y)
		}
	}
	return rx, ry
}

// ecdsaVerify checks a Sawtooth signature (hex r‖s) over SHA-256(msg), requiring low S.
func ecdsaVerify(t *testing.T, qx, qy *big.Int, msg []byte, sigHex string) bool {
	t.Helper()
	raw, err := hex.DecodeString(sigHex)
	require.NoError(t, err)
	require.Len(t, raw, 64)
	r := new(big.Int).SetBytes(raw[:32])
	s := new(big.Int).SetBytes(raw[32:])
	if r.Sign() == 0 || s.Sign() == 0 || r.Cmp(curveN) >= 0 || s.Cmp(curveN) >= 0 {
		return false
	}
	require.LessOrEqual(t, s.Cmp(new(big.Int).Rsh(curveN, 1)), 0, "S must be in the lower half")
	digest := sha256.Sum256(msg)
	e := new(big.Int).SetBytes(digest[:])
	w := new(big.Int).ModInverse(s, curveN)
	u1 := new(big.Int).Mul(e, w)
	u1.Mod(u1, curveN)
	u2 := new(big.Int).Mul(r, w)
	u2.Mod(u2, curveN)
	x1, y1 := scalarMult(u1, curveGx, curveGy)
	x2, y2 := scalarMult(u2, qx, qy)
	x, _ := pointAdd(x1, y1, x2, y2)
	if x == nil {
		return false
	}
	return new(big.Int).Mod(x, curveN).Cmp(r) == 0
}
