package vc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Hashlinks in the shape Orb writes: "hl:" + multibase base64url of a sha2-256 multihash.
const (
	testHRef   = "hl:uEiAIMnHwbdHbpWbL3OlruU1xtqW-Potpi0bW0ioXFCZ94w"
	testAnchor = "hl:uEiCJYS5Jin-3ZSwBT_RT0c0zZ0Z6B3_o0ddDDCMZXlUxAQ"
)

func testAnchorParams() AnchorParams {
	return AnchorParams{
		ID:     "https://a.example/vc/6f1c2e0a-7d0b-4b7e-9a55-3c3b8c0b1f00",
		Issuer: "did:web:a.example",
		Issued: time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC),
		HRef:   testHRef,
		Anchor: testAnchor,
	}
}

func testAnchorCredential(t testing.TB) *Credential {
	t.Helper()
	c, err := NewAnchorCredential(testAnchorParams())
	require.NoError(t, err)
	return c
}

func TestNewAnchorCredentialShape(t *testing.T) {
	t.Parallel()

	c := testAnchorCredential(t)
	got, err := c.MarshalJSON()
	require.NoError(t, err)
	require.JSONEq(t, `{
		"@context": ["https://www.w3.org/2018/credentials/v1", "https://w3id.org/activityanchors/v1",
			"https://w3id.org/security/suites/ed25519-2020/v1"],
		"type": ["VerifiableCredential", "AnchorCredential"],
		"id": "https://a.example/vc/6f1c2e0a-7d0b-4b7e-9a55-3c3b8c0b1f00",
		"issuer": "did:web:a.example",
		"issuanceDate": "2024-05-01T10:00:00.123456789Z",
		"credentialSubject": {
			"type": ["AnchorLink"], "rel": "linkset", "profile": "https://w3id.org/orb#v0",
			"href": "`+testHRef+`", "anchor": "`+testAnchor+`"
		}
	}`, string(got))

	// What NewAnchorCredential builds is what ParseCredential accepts and Orb's strict parse
	// accepts.
	parsed, err := ParseCredential(got)
	require.NoError(t, err)
	require.NoError(t, parsed.CheckStrict())

	subject, err := parsed.AnchorSubject()
	require.NoError(t, err)
	require.Equal(t, AnchorSubject{HRef: testHRef, Anchor: testAnchor, Profile: AnchorProfileDefault}, subject)
	require.Equal(t, "did:web:a.example", parsed.Issuer())
	require.Equal(t, testAnchorParams().Issued, parsed.IssuanceDate())
	require.Equal(t, testAnchorParams().ID, parsed.ID())
	require.Empty(t, parsed.Proofs())
}

func TestNewAnchorCredentialKeepsLocalTimeInstant(t *testing.T) {
	t.Parallel()

	p := testAnchorParams()
	p.Issued = time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	p.Profile = "https://w3id.org/orb#v1"
	c, err := NewAnchorCredential(p)
	require.NoError(t, err)

	raw, err := c.MarshalJSON()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Equal(t, "2024-05-01T10:00:00Z", m["issuanceDate"])
	s, err := c.AnchorSubject()
	require.NoError(t, err)
	require.Equal(t, "https://w3id.org/orb#v1", s.Profile)
}

func TestNewAnchorCredentialValidates(t *testing.T) {
	t.Parallel()

	for name, mutate := range map[string]func(*AnchorParams){
		"no id":              func(p *AnchorParams) { p.ID = "" },
		"no issuer":          func(p *AnchorParams) { p.Issuer = "" },
		"no issued":          func(p *AnchorParams) { p.Issued = time.Time{} },
		"href not hashlink":  func(p *AnchorParams) { p.HRef = "uEiAIMnHw" },
		"anchor empty link":  func(p *AnchorParams) { p.Anchor = "hl:" },
		"anchor not present": func(p *AnchorParams) { p.Anchor = "" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := testAnchorParams()
			mutate(&p)
			_, err := NewAnchorCredential(p)
			require.ErrorIs(t, err, ErrInvalidCredential)
		})
	}
}

func TestAnchorSubjectRejectsOtherSubjects(t *testing.T) {
	t.Parallel()

	for name, subject := range map[string]string{
		"array":        `[{"type":"AnchorLink","href":"hl:x","anchor":"hl:y","profile":"p"}]`,
		"wrong type":   `{"type":"Other","href":"hl:x","anchor":"hl:y","profile":"p"}`,
		"no href":      `{"type":"AnchorLink","anchor":"hl:y","profile":"p"}`,
		"href not str": `{"type":"AnchorLink","href":1,"anchor":"hl:y","profile":"p"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCredential([]byte(`{"@context":["https://www.w3.org/2018/credentials/v1"],
				"type":"VerifiableCredential","issuer":"did:web:a.example",
				"issuanceDate":"2024-05-01T10:00:00Z","credentialSubject":` + subject + `}`))
			require.NoError(t, err)
			_, err = c.AnchorSubject()
			require.ErrorIs(t, err, ErrInvalidCredential)
		})
	}
}
