package vc

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const minimalCredential = `{"@context":["https://www.w3.org/2018/credentials/v1"],"type":"VerifiableCredential",` +
	`"issuer":"did:web:a.example","issuanceDate":"2024-05-01T10:00:00Z","credentialSubject":{"id":"did:web:b.example"}`

func TestParseCredentialRoundTripIsByteStable(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	first, err := signed.MarshalJSON()
	require.NoError(t, err)

	parsed, err := ParseCredential(first)
	require.NoError(t, err)
	second, err := parsed.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(first), string(second))

	d1, err := signed.documentDigest()
	require.NoError(t, err)
	d2, err := parsed.documentDigest()
	require.NoError(t, err)
	require.Equal(t, d1, d2)
}

func TestParseCredentialKeepsNumbersAndEscapes(t *testing.T) {
	t.Parallel()

	in := minimalCredential[:len(minimalCredential)-1] +
		`,"n":12345678901234567890,"f":1.5e-7,"i":42,"s":"<a&b> é \u2028"}}`
	c, err := ParseCredential([]byte(in))
	require.NoError(t, err)
	out, err := c.MarshalJSON()
	require.NoError(t, err)
	require.Contains(t, string(out), `"i":42`)
	require.Contains(t, string(out), `"s":"<a&b> é `)

	again, err := ParseCredential(out)
	require.NoError(t, err)
	out2, err := again.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(out), string(out2))
}

func TestParseCredentialAccessors(t *testing.T) {
	t.Parallel()

	c, err := ParseCredential([]byte(`{"@context":"https://www.w3.org/2018/credentials/v1","id":"urn:x",
		"type":["VerifiableCredential"],"issuer":{"id":"did:web:a.example","name":"A"},
		"issuanceDate":"2024-05-01T10:00:00.5+02:00","credentialSubject":[{"id":"s1"},{"id":"s2"}],
		"proof":{"type":"Other2019","created":"2024-05-01T10:00:01Z","jws":"x..y"}}`))
	require.NoError(t, err)
	require.Equal(t, "urn:x", c.ID())
	require.Equal(t, "did:web:a.example", c.Issuer())
	require.Equal(t, "2024-05-01T08:00:00.5Z", c.IssuanceDate().UTC().Format("2006-01-02T15:04:05.999Z07:00"))
	require.Equal(t, []string{ContextCredentialsV1}, c.Contexts())
	require.Equal(t, []Proof{{Type: "Other2019", Created: "2024-05-01T10:00:01Z", JWS: "x..y"}}, c.Proofs())
	require.Empty(t, c.WithoutProofs().Proofs())
	require.Len(t, c.Proofs(), 1, "WithoutProofs must not change the original")
}

func TestParseCredentialRejects(t *testing.T) {
	t.Parallel()

	manyProofs := make([]string, MaxProofs+1)
	for i := range manyProofs {
		manyProofs[i] = `{"type":"T","created":"2024-05-01T10:00:00Z"}`
	}
	withField := func(field string) string {
		return minimalCredential + "," + field + "}"
	}
	for name, in := range map[string]string{
		"not JSON":             `{"@context":`,
		"array":                `[` + minimalCredential + `}]`,
		"null":                 `null`,
		"trailing data":        minimalCredential + `} {}`,
		"too large":            withField(`"pad":"` + strings.Repeat("x", MaxDocumentSize) + `"`),
		"too deep":             withField(`"deep":` + strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)),
		"no context":           `{"type":"VerifiableCredential","issuer":"i","issuanceDate":"2024-05-01T10:00:00Z","credentialSubject":{}}`,
		"empty context":        strings.Replace(minimalCredential, `["https://www.w3.org/2018/credentials/v1"]`, `[]`, 1) + `}`,
		"context not first":    strings.Replace(minimalCredential, `["https://www.w3.org/2018/credentials/v1"]`, `["https://w3id.org/security/v1","https://www.w3.org/2018/credentials/v1"]`, 1) + `}`,
		"context number":       strings.Replace(minimalCredential, `["https://www.w3.org/2018/credentials/v1"]`, `["https://www.w3.org/2018/credentials/v1",3]`, 1) + `}`,
		"not a VC type":        strings.Replace(minimalCredential, `"type":"VerifiableCredential"`, `"type":["Other"]`, 1) + `}`,
		"no issuer":            strings.Replace(minimalCredential, `"issuer":"did:web:a.example"`, `"issuer":{"name":"x"}`, 1) + `}`,
		"bad date":             strings.Replace(minimalCredential, `2024-05-01T10:00:00Z`, `May 1st`, 1) + `}`,
		"subject string":       strings.Replace(minimalCredential, `{"id":"did:web:b.example"}`, `"s"`, 1) + `}`,
		"empty id":             withField(`"id":""`),
		"proof string":         withField(`"proof":"z123"`),
		"proof null":           withField(`"proof":null`),
		"proof entry string":   withField(`"proof":["z123"]`),
		"proof without type":   withField(`"proof":{"created":"2024-05-01T10:00:00Z"}`),
		"proof without date":   withField(`"proof":{"type":"Ed25519Signature2020"}`),
		"proof bad date":       withField(`"proof":{"type":"Ed25519Signature2020","created":"yesterday"}`),
		"proof field a number": withField(`"proof":{"type":"Ed25519Signature2020","created":"2024-05-01T10:00:00Z","domain":5}`),
		"too many proofs":      withField(`"proof":[` + strings.Join(manyProofs, ",") + `]`),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCredential([]byte(in))
			require.ErrorIs(t, err, ErrInvalidCredential)
		})
	}
}

func TestCheckStrict(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	require.NoError(t, signed.CheckStrict(), "a signed anchor credential, proofs included, is strict")

	raw, err := testAnchorCredential(t).MarshalJSON()
	require.NoError(t, err)
	for name, mutate := range map[string]func(m map[string]any){
		"undefined top-level member": func(m map[string]any) { m["anchorOrigin"] = "https://a.example" },
		"undefined subject member": func(m map[string]any) {
			m["credentialSubject"].(map[string]any)["coreIndex"] = "hl:x"
		},
		"subject type unknown to the contexts": func(m map[string]any) {
			m["credentialSubject"].(map[string]any)["type"] = []any{"Link"}
		},
		"suite context missing under a 2020 proof": func(m map[string]any) {
			m["@context"] = []any{ContextCredentialsV1, ContextActivityAnchorsV1}
			m["proof"] = map[string]any{
				"type": "Ed25519Signature2020", "created": "2024-05-01T10:00:00Z",
				"proofPurpose": "assertionMethod", "verificationMethod": "did:web:a.example#k",
				"proofValue": "z3",
			}
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
			require.ErrorIs(t, c.CheckStrict(), ErrUndefinedTerm)
		})
	}
}

func ExampleCredential_MarshalJSON() {
	c, _ := ParseCredential([]byte(minimalCredential + `}`))
	b, _ := c.MarshalJSON()
	fmt.Println(string(b))
	// Output: {"@context":["https://www.w3.org/2018/credentials/v1"],"credentialSubject":{"id":"did:web:b.example"},"issuanceDate":"2024-05-01T10:00:00Z","issuer":"did:web:a.example","type":"VerifiableCredential"}
}
