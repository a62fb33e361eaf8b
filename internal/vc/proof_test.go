package vc

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/require"
)

// testKey derives a fixed key from seed, so vectors are reproducible.
func testKey(seed byte) ed25519.PrivateKey {
	s := make([]byte, ed25519.SeedSize)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return ed25519.NewKeyFromSeed(s)
}

func testDID(seed byte) string { return fmt.Sprintf("did:web:d%d.example%%3A8080", seed) }

func testProofOptions(seed byte) ProofOptions {
	return ProofOptions{
		VerificationMethod: testDID(seed) + "#" + KeyID(testKey(seed).Public().(ed25519.PublicKey)),
		Domain:             fmt.Sprintf("http://d%d.example:8080", seed),
		Created:            time.Date(2024, 5, 1, 10, 0, int(seed), 5000, time.UTC),
	}
}

// testResolver resolves the keys of the given seeds through their DID documents.
func testResolver(t testing.TB, seeds ...byte) ResolveKeyFunc {
	t.Helper()
	docs := make([]*DIDDocument, 0, len(seeds))
	for _, s := range seeds {
		d, err := NewDIDDocument(testDID(s), testKey(s).Public().(ed25519.PublicKey))
		require.NoError(t, err)
		docs = append(docs, d)
	}
	return DocumentResolver(docs...)
}

// reparse round-trips c through its JSON, as a peer receiving it would.
func reparse(t testing.TB, c *Credential) *Credential {
	t.Helper()
	b, err := c.MarshalJSON()
	require.NoError(t, err)
	out, err := ParseCredential(b)
	require.NoError(t, err)
	return out
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	unsigned := testAnchorCredential(t)
	signed, err := Sign(unsigned, testKey(1), testProofOptions(1))
	require.NoError(t, err)
	require.Empty(t, unsigned.Proofs(), "Sign must not change its input")

	received := reparse(t, signed)
	proofs := received.Proofs()
	require.Len(t, proofs, 1)
	p := proofs[0]
	require.Equal(t, ProofTypeEd25519Signature2020, p.Type)
	require.Equal(t, ProofPurposeAssertionMethod, p.ProofPurpose)
	require.Equal(t, "2024-05-01T10:00:01.000005Z", p.Created)
	require.Equal(t, testProofOptions(1).VerificationMethod, p.VerificationMethod)
	require.Equal(t, "http://d1.example:8080", p.Domain)
	require.Equal(t, byte('z'), p.ProofValue[0])

	require.NoError(t, VerifyProof(ctx, received, p, testResolver(t, 1)))
	require.NoError(t, received.CheckStrict())

	// Ed25519 is deterministic: the same credential, key and options give the same proof.
	again, err := CreateProof(received.WithoutProofs(), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	require.Equal(t, p, again)
}

// TestSignVector pins the proof for a fixed credential, key and time, so that a change in
// canonicalization or in the signed data shows up here. The same proofValue verifies under
// Orb's signing library (its JSON-LD suite implementation), checked when this vector was made.
func TestSignVector(t *testing.T) {
	t.Parallel()

	p, err := CreateProof(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	require.Equal(t, testVectorProofValue, p.ProofValue)
}

func TestVerifyFailsOnAnyChange(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	raw, err := signed.MarshalJSON()
	require.NoError(t, err)

	subject := func(m map[string]any) map[string]any { return m["credentialSubject"].(map[string]any) }
	proof := func(m map[string]any) map[string]any { return m["proof"].([]any)[0].(map[string]any) }
	for name, mutate := range map[string]func(m map[string]any){
		"id":                  func(m map[string]any) { m["id"] = "https://a.example/vc/other" },
		"issuer":              func(m map[string]any) { m["issuer"] = "did:web:b.example" },
		"issuanceDate":        func(m map[string]any) { m["issuanceDate"] = "2024-05-01T10:00:00.12345679Z" },
		"issuanceDate format": func(m map[string]any) { m["issuanceDate"] = "2024-05-01T10:00:00.1234567890Z" },
		"type":                func(m map[string]any) { m["type"] = []any{"VerifiableCredential"} },
		"subject href":        func(m map[string]any) { subject(m)["href"] = testAnchor },
		"subject anchor":      func(m map[string]any) { subject(m)["anchor"] = testHRef },
		"subject profile":     func(m map[string]any) { subject(m)["profile"] = "https://w3id.org/orb#v1" },
		"subject rel":         func(m map[string]any) { subject(m)["rel"] = "related" },
		"subject id added":    func(m map[string]any) { subject(m)["id"] = "did:web:x.example" },
		"proof created":       func(m map[string]any) { proof(m)["created"] = "2024-05-01T10:00:02.000005Z" },
		"proof domain":        func(m map[string]any) { proof(m)["domain"] = "http://other.example" },
		"proof domain gone":   func(m map[string]any) { delete(proof(m), "domain") },
		"proof challenge":     func(m map[string]any) { proof(m)["challenge"] = "abc" },
		"proof value": func(m map[string]any) {
			sig, _ := base58.Decode(proof(m)["proofValue"].(string)[1:])
			sig[10] ^= 1
			proof(m)["proofValue"] = "z" + base58.Encode(sig)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var m map[string]any
			require.NoError(t, json.Unmarshal(raw, &m))
			mutate(m)
			b, err := json.Marshal(m)
			require.NoError(t, err)
			c, err := ParseCredential(b)
			require.NoError(t, err)
			err = VerifyProof(context.Background(), c, c.Proofs()[0], testResolver(t, 1))
			require.ErrorIs(t, err, ErrInvalidProof)
		})
	}
}

func TestVerifyRefusesUnsignedAdditions(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	raw, err := signed.MarshalJSON()
	require.NoError(t, err)

	// A member no context defines would not be covered by the signature; refusing it keeps
	// "verified" meaning "every member is signed".
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m["credentialSubject"].(map[string]any)["note"] = "unsigned"
	b, err := json.Marshal(m)
	require.NoError(t, err)
	c, err := ParseCredential(b)
	require.NoError(t, err)
	err = VerifyProof(context.Background(), c, c.Proofs()[0], testResolver(t, 1))
	require.ErrorIs(t, err, ErrUndefinedTerm)

	_, err = CreateProof(c, testKey(1), testProofOptions(1))
	require.ErrorIs(t, err, ErrUndefinedTerm)
}

func TestVerifyWithWrongKeyFails(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	p := signed.Proofs()[0]

	other := func(context.Context, string) (ed25519.PublicKey, error) {
		return testKey(2).Public().(ed25519.PublicKey), nil
	}
	require.ErrorIs(t, VerifyProof(context.Background(), signed, p, other), ErrInvalidProof)

	// A verification method the resolver does not know fails resolution, not the signature.
	err = VerifyProof(context.Background(), signed, p, testResolver(t, 2))
	require.ErrorIs(t, err, ErrInvalidDID)
	require.NotErrorIs(t, err, ErrInvalidProof)

	short := func(context.Context, string) (ed25519.PublicKey, error) { return make([]byte, 31), nil }
	require.Error(t, VerifyProof(context.Background(), signed, p, short))
}

// An origin signs, each witness signs the credential as offered (unproofed), and the origin
// collects the witnesses' proofs: every proof verifies on its own, whatever else is attached.
func TestMultipleProofs(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	offered := testAnchorCredential(t)
	origin, err := Sign(offered, testKey(1), testProofOptions(1))
	require.NoError(t, err)

	collected := origin
	for _, seed := range []byte{2, 3} {
		w, err := CreateProof(reparse(t, offered), testKey(seed), testProofOptions(seed))
		require.NoError(t, err)

		// The proof travels in an AnchorReceipt attachment.
		att, err := json.Marshal(NewProofAttachment(w))
		require.NoError(t, err)
		received, err := ParseProofAttachment(att)
		require.NoError(t, err)
		require.Equal(t, w, received)

		require.NoError(t, VerifyProof(ctx, offered, received, testResolver(t, seed)))
		collected, err = AddProof(collected, received)
		require.NoError(t, err)
	}

	final := reparse(t, collected)
	require.NoError(t, final.CheckStrict())
	proofs := final.Proofs()
	require.Len(t, proofs, 3)
	resolve := testResolver(t, 1, 2, 3)
	for i, p := range proofs {
		require.NoError(t, VerifyProof(ctx, final, p, resolve), "proof %d", i)
	}

	// Dropping one proof leaves the others valid.
	withoutFirst, err := AddProof(offered, proofs[1])
	require.NoError(t, err)
	withoutFirst, err = AddProof(withoutFirst, proofs[2])
	require.NoError(t, err)
	for _, p := range reparse(t, withoutFirst).Proofs() {
		require.NoError(t, VerifyProof(ctx, withoutFirst, p, resolve))
	}

	// Signing again with a key already present appends, it does not replace.
	more, err := Sign(final, testKey(1), testProofOptions(4))
	require.NoError(t, err)
	require.Len(t, more.Proofs(), 4)
}

// Orb appends the suite context before signing when the credential lacks it; a proof made that
// way verifies once the context is in the credential, and the context is never added twice.
func TestSuiteContextAppendedOnce(t *testing.T) {
	t.Parallel()

	raw, err := testAnchorCredential(t).MarshalJSON()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m["@context"] = []any{ContextCredentialsV1, ContextActivityAnchorsV1}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	bare, err := ParseCredential(b)
	require.NoError(t, err)

	w, err := CreateProof(bare, testKey(2), testProofOptions(2))
	require.NoError(t, err)
	require.NoError(t, VerifyProof(context.Background(), bare, w, testResolver(t, 2)))

	signed, err := Sign(bare, testKey(1), testProofOptions(1))
	require.NoError(t, err)
	signed, err = AddProof(signed, w)
	require.NoError(t, err)
	signed, err = Sign(signed, testKey(3), testProofOptions(3))
	require.NoError(t, err)
	want := []string{ContextCredentialsV1, ContextActivityAnchorsV1, ContextEd25519Signature2020}
	require.Equal(t, want, signed.Contexts())
	require.Equal(t, []string{ContextCredentialsV1, ContextActivityAnchorsV1}, bare.Contexts())

	final := reparse(t, signed)
	require.NoError(t, final.CheckStrict())
	for _, p := range final.Proofs() {
		require.NoError(t, VerifyProof(context.Background(), final, p, testResolver(t, 1, 2, 3)))
	}

	// The proof made over the credential with the context already present is the same proof.
	w2, err := CreateProof(final, testKey(2), testProofOptions(2))
	require.NoError(t, err)
	require.Equal(t, w, w2)
}

func TestVerifyRejectsMalformedOrUnsupportedProofs(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	good := signed.Proofs()[0]
	sig, err := base58.Decode(good.ProofValue[1:])
	require.NoError(t, err)

	for name, tc := range map[string]struct {
		mutate func(p *Proof)
		want   error
	}{
		"other type":           {func(p *Proof) { p.Type = "JsonWebSignature2020" }, ErrUnsupportedProof},
		"other purpose":        {func(p *Proof) { p.ProofPurpose = "authentication" }, ErrUnsupportedProof},
		"no purpose":           {func(p *Proof) { p.ProofPurpose = "" }, ErrUnsupportedProof},
		"no method":            {func(p *Proof) { p.VerificationMethod = "" }, ErrInvalidProof},
		"bad created":          {func(p *Proof) { p.Created = "now" }, ErrInvalidProof},
		"no proofValue":        {func(p *Proof) { p.ProofValue = "" }, ErrInvalidProof},
		"base64 proofValue":    {func(p *Proof) { p.ProofValue = "u" + good.ProofValue[1:] }, ErrInvalidProof},
		"not base58":           {func(p *Proof) { p.ProofValue = "z0OIl" }, ErrInvalidProof},
		"short signature":      {func(p *Proof) { p.ProofValue = "z" + base58.Encode(sig[:63]) }, ErrInvalidProof},
		"long signature":       {func(p *Proof) { p.ProofValue = "z" + base58.Encode(append(slices.Clone(sig), 0)) }, ErrInvalidProof},
		"huge proofValue":      {func(p *Proof) { p.ProofValue = "z" + base58.Encode(make([]byte, 4096)) }, ErrInvalidProof},
		"signature of other":   {func(p *Proof) { p.ProofValue = "z" + base58.Encode(make([]byte, 64)) }, ErrInvalidProof},
		"only the multibase z": {func(p *Proof) { p.ProofValue = "z" }, ErrInvalidProof},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := good
			tc.mutate(&p)
			err := VerifyProof(context.Background(), signed, p, testResolver(t, 1))
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestCreateProofValidatesInput(t *testing.T) {
	t.Parallel()

	c := testAnchorCredential(t)
	_, err := CreateProof(c, testKey(1)[:32], testProofOptions(1))
	require.Error(t, err)
	_, err = CreateProof(c, testKey(1), ProofOptions{})
	require.Error(t, err)

	before := time.Now().Add(-time.Second)
	p, err := CreateProof(c, testKey(1), ProofOptions{VerificationMethod: testProofOptions(1).VerificationMethod})
	require.NoError(t, err)
	created, err := p.CreatedTime()
	require.NoError(t, err)
	require.True(t, created.After(before), "zero Created means now")
	require.Empty(t, p.Domain)
	require.NoError(t, VerifyProof(context.Background(), c, p, testResolver(t, 1)))
}

func TestAddProofChecksShapeAndLimit(t *testing.T) {
	t.Parallel()

	c := testAnchorCredential(t)
	_, err := AddProof(c, Proof{Type: ProofTypeEd25519Signature2020})
	require.ErrorIs(t, err, ErrInvalidProof)

	p, err := CreateProof(c, testKey(1), testProofOptions(1))
	require.NoError(t, err)
	for range MaxProofs {
		c, err = AddProof(c, p)
		require.NoError(t, err)
	}
	_, err = AddProof(c, p)
	require.Error(t, err)
}

func TestParseProofAttachmentRejects(t *testing.T) {
	t.Parallel()

	for name, in := range map[string]string{
		"not JSON":      `{`,
		"no proof":      `{"@context":["https://w3id.org/security/v1"]}`,
		"proof array":   `{"proof":[{"type":"Ed25519Signature2020","created":"2024-05-01T10:00:00Z"}]}`,
		"proof no date": `{"proof":{"type":"Ed25519Signature2020"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseProofAttachment([]byte(in))
			require.ErrorIs(t, err, ErrInvalidProof)
		})
	}
}

func TestProofAttachmentShape(t *testing.T) {
	t.Parallel()

	p, err := CreateProof(testAnchorCredential(t), testKey(2), testProofOptions(2))
	require.NoError(t, err)
	b, err := json.Marshal(NewProofAttachment(p))
	require.NoError(t, err)
	require.JSONEq(t, `{"@context":["https://w3id.org/security/v1","https://w3id.org/security/suites/ed25519-2020/v1"],
		"proof":{"type":"Ed25519Signature2020","created":"2024-05-01T10:00:02.000005Z",
		"verificationMethod":"`+p.VerificationMethod+`","proofPurpose":"assertionMethod",
		"domain":"http://d2.example:8080","proofValue":"`+p.ProofValue+`"}}`, string(b))
}

const testVectorProofValue = "z5FxSixUEZmUf4fhmiVqvJswW4UuVUWfXiwo8oksku8Wafy6eMwU32DpNTLWKyHwZYFmQ74MBzvxe5onFiMym3CJN"
