package vc

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/require"
)

func TestDIDWeb(t *testing.T) {
	t.Parallel()

	for endpoint, want := range map[string]string{
		"https://example.com":                       "did:web:example.com",
		"https://example.com/":                      "did:web:example.com",
		"http://127.0.0.1:8080":                     "did:web:127.0.0.1%3A8080",
		"http://127.0.0.1:80":                       "did:web:127.0.0.1%3A80",
		"https://Orb.Example.COM:8443/services/orb": "did:web:orb.example.com%3A8443:services:orb",
		"https://example.com/a/b/":                  "did:web:example.com:a:b",
		"https://example.com/a%20b/c:d":             "did:web:example.com:a%20b:c%3Ad",
	} {
		t.Run(endpoint, func(t *testing.T) {
			t.Parallel()
			got, err := DIDWeb(endpoint)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestDIDWebRejects(t *testing.T) {
	t.Parallel()

	for _, endpoint := range []string{
		"ftp://example.com",
		"example.com",
		"https://",
		"http://[::1]:8080",
		"https://example.com/?x=1",
		"https://example.com/#frag",
		"https://user@example.com",
		"http://exa mple.com",
	} {
		_, err := DIDWeb(endpoint)
		require.ErrorIs(t, err, ErrInvalidDID, endpoint)
	}
}

func TestParseDIDWeb(t *testing.T) {
	t.Parallel()

	for did, want := range map[string][2]string{
		"did:web:example.com":                         {"example.com", "/.well-known/did.json"},
		"did:web:127.0.0.1%3A8080":                    {"127.0.0.1:8080", "/.well-known/did.json"},
		"did:web:127.0.0.1%3a8080#key-1":              {"127.0.0.1:8080", "/.well-known/did.json"},
		"did:web:orb.example.com%3A8443:services:orb": {"orb.example.com:8443", "/services/orb/did.json"},
		"did:web:example.com:a%20b":                   {"example.com", "/a b/did.json"},
	} {
		t.Run(did, func(t *testing.T) {
			t.Parallel()
			host, path, err := ParseDIDWeb(did)
			require.NoError(t, err)
			require.Equal(t, want, [2]string{host, path})
		})
	}

	for _, did := range []string{
		"did:web:", "did:key:z6Mk", "did:web:%zz", "did:web:example.com:", "did:web:example.com::x",
		"did:web:example.com:..", "did:web:example.com:a%2Fb", "did:web:a@b", "did:web:example.com%3A",
		"did:web:%5B%3A%3A1%5D", "web:example.com",
	} {
		_, _, err := ParseDIDWeb(did)
		require.ErrorIs(t, err, ErrInvalidDID, did)
	}
}

func TestDIDWebRoundTrip(t *testing.T) {
	t.Parallel()

	for _, endpoint := range []string{"http://127.0.0.1:8080", "https://a.example/services/orb"} {
		did, err := DIDWeb(endpoint)
		require.NoError(t, err)
		host, path, err := ParseDIDWeb(did)
		require.NoError(t, err)
		require.Contains(t, endpoint, host)
		require.Contains(t, []string{WellKnownDIDPath, "/services/orb/did.json"}, path)
	}
}

func TestPublicKeyMultibase(t *testing.T) {
	t.Parallel()

	pub := testKey(1).Public().(ed25519.PublicKey)
	enc := EncodePublicKeyMultibase(pub)
	raw, err := base58.Decode(enc[1:])
	require.NoError(t, err)
	require.Equal(t, []byte(pub), raw, "published without a multicodec prefix, as Orb does")

	got, err := DecodePublicKeyMultibase(enc)
	require.NoError(t, err)
	require.Equal(t, pub, got)

	prefixed := "z" + base58.Encode(append([]byte{0xed, 0x01}, pub...))
	require.Equal(t, "z6Mk", prefixed[:4])
	got, err = DecodePublicKeyMultibase(prefixed)
	require.NoError(t, err)
	require.Equal(t, pub, got)

	for _, bad := range []string{
		"", "z", "u" + enc[1:], "z0OIl", "z" + base58.Encode(pub[:31]),
		"z" + base58.Encode(append([]byte{0xe7, 0x01}, pub...)),
		"z" + base58.Encode(make([]byte, 100)),
	} {
		_, err := DecodePublicKeyMultibase(bad)
		require.ErrorIs(t, err, ErrInvalidDID, bad)
	}
}

func TestDIDDocument(t *testing.T) {
	t.Parallel()

	did := "did:web:127.0.0.1%3A8080"
	k1 := testKey(1).Public().(ed25519.PublicKey)
	k2 := testKey(2).Public().(ed25519.PublicKey)
	doc, err := NewDIDDocument(did, k1, k2)
	require.NoError(t, err)

	b, err := json.Marshal(doc)
	require.NoError(t, err)
	id1 := did + "#" + KeyID(k1)
	require.JSONEq(t, `{
		"@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/ed25519-2020/v1"],
		"id": "`+did+`",
		"verificationMethod": [
			{"id": "`+id1+`", "type": "Ed25519VerificationKey2020", "controller": "`+did+`",
			 "publicKeyMultibase": "`+EncodePublicKeyMultibase(k1)+`"},
			{"id": "`+did+"#"+KeyID(k2)+`", "type": "Ed25519VerificationKey2020", "controller": "`+did+`",
			 "publicKeyMultibase": "`+EncodePublicKeyMultibase(k2)+`"}
		],
		"authentication": ["`+id1+`", "`+did+"#"+KeyID(k2)+`"],
		"assertionMethod": ["`+id1+`", "`+did+"#"+KeyID(k2)+`"],
		"capabilityDelegation": ["`+id1+`", "`+did+"#"+KeyID(k2)+`"],
		"capabilityInvocation": ["`+id1+`", "`+did+"#"+KeyID(k2)+`"]
	}`, string(b))
	require.Len(t, KeyID(k1), 43)

	parsed, err := ParseDIDDocument(b)
	require.NoError(t, err)
	got, err := parsed.AssertionKey(id1)
	require.NoError(t, err)
	require.Equal(t, k1, got)
	got, err = parsed.AssertionKey("#" + KeyID(k2))
	require.NoError(t, err)
	require.Equal(t, k2, got)

	_, err = NewDIDDocument("did:web:a.example#frag", k1)
	require.ErrorIs(t, err, ErrInvalidDID)
	_, err = NewDIDDocument("did:key:abc", k1)
	require.ErrorIs(t, err, ErrInvalidDID)
	_, err = NewDIDDocument(did, k1[:16])
	require.Error(t, err)
}

// Documents written by other implementations: a string @context, relative ids, embedded
// methods in a relationship, prefixed keys.
func TestDIDDocumentFromOthers(t *testing.T) {
	t.Parallel()

	pub := testKey(3).Public().(ed25519.PublicKey)
	prefixed := "z" + base58.Encode(append([]byte{0xed, 0x01}, pub...))
	doc, err := ParseDIDDocument([]byte(`{"@context":"https://www.w3.org/ns/did/v1","id":"did:web:w.example",
		"verificationMethod":[{"id":"#k1","type":"Ed25519VerificationKey2020","controller":"did:web:w.example","publicKeyMultibase":"` + prefixed + `"},
			{"id":"did:web:w.example#jwk","type":"JsonWebKey2020","controller":"did:web:w.example"},
			{"id":"did:web:w.example#auth","type":"Ed25519VerificationKey2020","controller":"did:web:w.example","publicKeyMultibase":"` + prefixed + `"}],
		"assertionMethod":["#k1",{"id":"did:web:w.example#jwk","type":"JsonWebKey2020"}],
		"authentication":["did:web:w.example#auth"]}`))
	require.NoError(t, err)
	require.Equal(t, ContextList{ContextDIDV1}, doc.Context)

	got, err := doc.AssertionKey("did:web:w.example#k1")
	require.NoError(t, err)
	require.Equal(t, pub, got)

	for vm, why := range map[string]string{
		"did:web:w.example#jwk":    "not an Ed25519VerificationKey2020",
		"did:web:w.example#auth":   "authentication only",
		"did:web:w.example#none":   "not listed",
		"did:web:other.example#k1": "another DID",
	} {
		_, err := doc.AssertionKey(vm)
		require.ErrorIs(t, err, ErrInvalidDID, why)
	}

	for name, in := range map[string]string{
		"no id":             `{"verificationMethod":[]}`,
		"bad relationship":  `{"id":"did:web:x","assertionMethod":[5]}`,
		"relationship noid": `{"id":"did:web:x","assertionMethod":[{"type":"X"}]}`,
		"bad context":       `{"id":"did:web:x","@context":5}`,
		"too deep":          `{"id":"did:web:x","y":` + deepJSON(maxDepth+1) + `}`,
		"not JSON":          `{`,
	} {
		_, err := ParseDIDDocument([]byte(in))
		require.ErrorIs(t, err, ErrInvalidDID, name)
	}
}

func deepJSON(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func TestDocumentResolver(t *testing.T) {
	t.Parallel()

	resolve := testResolver(t, 1, 2)
	pub, err := resolve(t.Context(), testProofOptions(2).VerificationMethod)
	require.NoError(t, err)
	require.Equal(t, testKey(2).Public(), pub)

	_, err = resolve(t.Context(), "did:web:unknown.example#k")
	require.ErrorIs(t, err, ErrInvalidDID)
}
