package vc

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func BenchmarkSign(b *testing.B) {
	c := testAnchorCredential(b)
	key, opts := testKey(1), testProofOptions(1)
	b.ReportAllocs()
	for b.Loop() {
		// A fresh Credential each time, so the document digest is not reused from a cache.
		_, err := Sign(c.WithoutProofs(), key, opts)
		require.NoError(b, err)
	}
}

// BenchmarkVerify measures verifying one proof of a credential received over the wire, parse
// included.
func BenchmarkVerify(b *testing.B) {
	signed, err := Sign(testAnchorCredential(b), testKey(1), testProofOptions(1))
	require.NoError(b, err)
	raw, err := signed.MarshalJSON()
	require.NoError(b, err)
	resolve := testResolver(b, 1)
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCredential(raw)
		require.NoError(b, err)
		require.NoError(b, VerifyProof(context.Background(), c, c.Proofs()[0], resolve))
	}
}

// BenchmarkVerifyThreeProofs verifies an origin's and two witnesses' proofs on one received
// credential; the document is canonicalized once for all three.
func BenchmarkVerifyThreeProofs(b *testing.B) {
	c := testAnchorCredential(b)
	for _, seed := range []byte{1, 2, 3} {
		var err error
		c, err = Sign(c, testKey(seed), testProofOptions(seed))
		require.NoError(b, err)
	}
	raw, err := c.MarshalJSON()
	require.NoError(b, err)
	resolve := testResolver(b, 1, 2, 3)
	b.ReportAllocs()
	for b.Loop() {
		c, err := ParseCredential(raw)
		require.NoError(b, err)
		for _, p := range c.Proofs() {
			require.NoError(b, VerifyProof(context.Background(), c, p, resolve))
		}
	}
}

func BenchmarkCheckStrict(b *testing.B) {
	signed, err := Sign(testAnchorCredential(b), testKey(1), testProofOptions(1))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		require.NoError(b, signed.CheckStrict())
	}
}
