package vc

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseCredential feeds arbitrary bytes through everything a receiver does with a
// credential: parse, re-marshal, strict check and proof verification. None of it may panic,
// and whatever parses must survive a JSON round trip unchanged.
func FuzzParseCredential(f *testing.F) {
	unsigned := testAnchorCredential(f)
	signed, err := Sign(unsigned, testKey(1), testProofOptions(1))
	require.NoError(f, err)
	signed, err = Sign(signed, testKey(2), testProofOptions(2))
	require.NoError(f, err)
	for _, c := range []*Credential{unsigned, signed} {
		raw, err := c.MarshalJSON()
		require.NoError(f, err)
		f.Add(raw)
	}
	f.Add([]byte(minimalCredential + `}`))
	f.Add([]byte(minimalCredential + `,"proof":{"type":"Ed25519Signature2020","created":"2024-05-01T10:00:00Z","proofPurpose":"assertionMethod","verificationMethod":"did:web:a#k","proofValue":"z11"}}`))
	f.Add([]byte(`{"@context":["https://www.w3.org/2018/credentials/v1",{"@import":"https://w3id.org/security/v1"}],"type":"VerifiableCredential","issuer":"i","issuanceDate":"2024-05-01T10:00:00Z","credentialSubject":{"@id":"_:b0","@reverse":{}}}`))
	f.Add([]byte(`{"@context":["https://www.w3.org/2018/credentials/v1",{"x":{"@id":"https://x/#x","@container":"@list"}}],"type":"VerifiableCredential","issuer":"i","issuanceDate":"2024-05-01T10:00:00Z","credentialSubject":{"x":[[1.5,true,null]]}}`))
	f.Add([]byte(`[]`))

	resolve := testResolver(f, 1, 2)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCredential(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidCredential)
			return
		}
		raw, err := c.MarshalJSON()
		if err != nil {
			return // numbers outside what canonical JSON can write
		}
		again, err := ParseCredential(raw)
		require.NoError(t, err)
		raw2, err := again.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, string(raw), string(raw2))

		_ = c.CheckStrict()
		_, _ = c.AnchorSubject()
		for _, p := range c.Proofs() {
			_ = VerifyProof(context.Background(), c, p, resolve)
		}
	})
}

// FuzzParseProofAttachment covers the witness-reply side: a proof attachment and a DID
// document, both read from peers.
func FuzzParseProofAttachment(f *testing.F) {
	p, err := CreateProof(testAnchorCredential(f), testKey(2), testProofOptions(2))
	require.NoError(f, err)
	att, err := json.Marshal(NewProofAttachment(p))
	require.NoError(f, err)
	f.Add(att)
	doc, err := NewDIDDocument(testDID(1), testKey(1).Public().(ed25519.PublicKey))
	require.NoError(f, err)
	docJSON, err := json.Marshal(doc)
	require.NoError(f, err)
	f.Add(docJSON)
	f.Add([]byte(`{"proof":{"type":"Ed25519Signature2020","created":"2024-05-01T10:00:00Z","proofValue":"z"}}`))
	f.Add([]byte(`{"id":"did:web:x","assertionMethod":["#k",{"id":"#k"}],"verificationMethod":[{"id":"#k","type":"Ed25519VerificationKey2020","publicKeyMultibase":"z6Mk"}]}`))

	c := testAnchorCredential(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if p, err := ParseProofAttachment(data); err == nil {
			_ = VerifyProof(context.Background(), c, p, testResolver(t, 2))
			_, _ = AddProof(c, p)
		}
		if d, err := ParseDIDDocument(data); err == nil {
			for _, m := range d.VerificationMethod {
				_, _ = d.AssertionKey(m.ID)
				_, _, _ = ParseDIDWeb(m.ID)
			}
			_, _, _ = ParseDIDWeb(d.ID)
		}
		_, _ = DecodePublicKeyMultibase(string(data))
		_, _ = DIDWeb(string(data))
	})
}
