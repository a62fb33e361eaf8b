package httpsig

import (
	"encoding/base64"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sig64 is a syntactically valid signature parameter value.
var sig64 = base64.StdEncoding.EncodeToString(make([]byte, 64))

func TestParseSignatureHeader(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		header  string
		keyID   string
		alg     string
		headers []string
		created string
		expires string
	}{
		{
			name:    "Orb",
			header:  `keyId="https://orb.example/services/orb/keys/main-key",algorithm="Sign",headers="(request-target) Date Digest",signature="` + sig64 + `"`,
			keyID:   "https://orb.example/services/orb/keys/main-key",
			alg:     "Sign",
			headers: []string{"(request-target)", "date", "digest"},
		},
		{
			name:    "spaces around separators",
			header:  ` keyId = "k" ,  algorithm="hs2019",	headers="(request-target)   date" , signature="` + sig64 + `" `,
			keyID:   "k",
			alg:     "hs2019",
			headers: []string{"(request-target)", "date"},
		},
		{
			name:    "no algorithm, unknown parameter ignored",
			header:  `keyId="k",headers="(request-target) date",extra="x y",signature="` + sig64 + `"`,
			keyID:   "k",
			headers: []string{"(request-target)", "date"},
		},
		{
			name:    "no headers parameter means (created)",
			header:  `keyId="k",signature="` + sig64 + `",created=1700000000`,
			keyID:   "k",
			headers: []string{"(created)"},
			created: "1700000000",
		},
		{
			name:    "created quoted",
			header:  `keyId="k",created="1700000000",headers="(created)",signature="` + sig64 + `"`,
			keyID:   "k",
			headers: []string{"(created)"},
			created: "1700000000",
		},
		{
			name:    "created and expires, fractional",
			header:  `keyId="k",created=1700000000,expires=1700000300.5,headers="(request-target) (created) (expires) date",signature="` + sig64 + `"`,
			keyID:   "k",
			headers: []string{"(request-target)", "(created)", "(expires)", "date"},
			created: "1700000000",
			expires: "1700000300.5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := parseSignatureHeader(tt.header)
			require.NoError(t, err)
			require.Equal(t, tt.keyID, p.keyID)
			require.Equal(t, tt.alg, p.algorithm)
			require.Equal(t, tt.headers, p.headers)
			require.Equal(t, tt.created, p.created)
			require.Equal(t, tt.expires, p.expires)
		})
	}
}

func TestParseSignatureHeaderRejects(t *testing.T) {
	t.Parallel()

	good := `keyId="k",headers="(request-target) date",signature="` + sig64 + `"`
	tests := []struct {
		name   string
		header string
	}{
		{"empty", ""},
		{"blank", "   "},
		{"too long", good + `,x="` + strings.Repeat("a", maxSignatureHeaderBytes) + `"`},
		{"no keyId", `headers="date",signature="` + sig64 + `"`},
		{"empty keyId", `keyId="",signature="` + sig64 + `"`},
		{"keyId too long", `keyId="` + strings.Repeat("k", maxKeyIDBytes+1) + `",signature="` + sig64 + `"`},
		{"no signature", `keyId="k",headers="date"`},
		{"signature not base64", `keyId="k",signature="!!!!"`},
		{"signature too short", `keyId="k",signature="` + base64.StdEncoding.EncodeToString(make([]byte, 63)) + `"`},
		{"signature unpadded", `keyId="k",signature="` + strings.TrimRight(sig64, "=") + `"`},
		{"duplicate parameter", good + `,keyId="other"`},
		{"unquoted string", `keyId=k,signature="` + sig64 + `"`},
		{"unterminated", `keyId="k,signature="` + sig64},
		{"backslash", `keyId="k\"x",signature="` + sig64 + `"`},
		{"control character", "keyId=\"k\x01\",signature=\"" + sig64 + `"`},
		{"non-ASCII", "keyId=\"kä\",signature=\"" + sig64 + `"`},
		{"trailing comma", good + ","},
		{"missing comma", `keyId="k" signature="` + sig64 + `"`},
		{"semicolon", `keyId="k";signature="` + sig64 + `"`},
		{"no equals", `keyId "k",signature="` + sig64 + `"`},
		{"name with digit", `key1="k",keyId="k",signature="` + sig64 + `"`},
		{"no value", `keyId=`},
		{"empty headers", `keyId="k",headers="",signature="` + sig64 + `"`},
		{"header named twice", `keyId="k",headers="date Date",signature="` + sig64 + `"`},
		{"bad header name", `keyId="k",headers="(request-target) da:te",signature="` + sig64 + `"`},
		{"too many headers", `keyId="k",headers="` + manyHeaderNames(maxSignedHeaders+1) + `",signature="` + sig64 + `"`},
		{"too many parameters", good + strings.Repeat(`,x="1"`, maxParams)},
		{"created not a number", `keyId="k",created=12a,signature="` + sig64 + `"`},
		{"created starts with dot", `keyId="k",created=.5,signature="` + sig64 + `"`},
		{"created two dots", `keyId="k",created=1.2.3,signature="` + sig64 + `"`},
		{"created too long", `keyId="k",created=123456789012345678901,signature="` + sig64 + `"`},
		{"created empty", `keyId="k",created=,signature="` + sig64 + `"`},
		{"created quoted, not a number", `keyId="k",created="abc",signature="` + sig64 + `"`},
		{"expires quoted exponent", `keyId="k",expires="1e5",signature="` + sig64 + `"`},
		{"expires trailing dot", `keyId="k",expires=1.,signature="` + sig64 + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseSignatureHeader(tt.header)
			require.ErrorIs(t, err, errMalformed)
		})
	}
}

func TestFormatSignatureHeaderRoundTrip(t *testing.T) {
	t.Parallel()

	sig := make([]byte, 64)
	for i := range sig {
		sig[i] = byte(i * 7)
	}
	h := formatSignatureHeader("https://a.example/services/anchord/keys/main-key", "Sign",
		[]string{"(request-target)", "Date", "Digest"}, sig)
	require.Equal(t, `keyId="https://a.example/services/anchord/keys/main-key",algorithm="Sign",`+
		`headers="(request-target) Date Digest",signature="`+base64.StdEncoding.EncodeToString(sig)+`"`, h)

	p, err := parseSignatureHeader(h)
	require.NoError(t, err)
	require.Equal(t, "https://a.example/services/anchord/keys/main-key", p.keyID)
	require.Equal(t, "Sign", p.algorithm)
	require.Equal(t, []string{"(request-target)", "date", "digest"}, p.headers)
	require.Equal(t, sig, p.signature[:])
}

func TestSigningString(t *testing.T) {
	t.Parallel()

	r := httptest.NewRequest("POST", "https://b.example/services/orb/inbox?x=1&y=%20", nil)
	r.Header.Set("Date", "Tue, 07 Jun 2022 20:51:35 GMT")
	r.Header.Set("Digest", "  SHA-256=abc  ")
	p := signatureParams{headers: []string{"(request-target)", "date", "digest", "host", "(created)"}, created: "1654635095"}

	s, err := signingString(r, requestTargetOf(r), &p)
	require.NoError(t, err)
	require.Equal(t, "(request-target): post /services/orb/inbox?x=1&y=%20\n"+
		"date: Tue, 07 Jun 2022 20:51:35 GMT\n"+
		"digest: SHA-256=abc\n"+
		"host: b.example\n"+
		"(created): 1654635095", s)

	t.Run("missing header", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("GET", "/x", nil)
		_, err := signingString(r, "/x", &signatureParams{headers: []string{"date"}})
		require.ErrorIs(t, err, errMissingHeader)
	})
	t.Run("repeated header", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header.Add("Date", "a")
		r.Header.Add("Date", "b")
		_, err := signingString(r, "/x", &signatureParams{headers: []string{"date"}})
		require.ErrorIs(t, err, errMalformed)
	})
	t.Run("expires without parameter", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("GET", "/x", nil)
		_, err := signingString(r, "/x", &signatureParams{headers: []string{"(expires)"}})
		require.ErrorIs(t, err, errMalformed)
	})
}

func TestRequestTargetOf(t *testing.T) {
	t.Parallel()

	server := httptest.NewRequest("GET", "/services/a%2Fb/inbox?page=1", nil)
	// A router that strips a prefix rewrites URL but not the request line the sender signed.
	server.URL.Path = "/inbox"
	server.URL.RawPath = ""
	require.Equal(t, "/services/a%2Fb/inbox?page=1", requestTargetOf(server))

	client := httptest.NewRequest("GET", "/services/orb/outbox?page=true", nil)
	client.RequestURI = ""
	require.Equal(t, "/services/orb/outbox?page=true", requestTargetOf(client))
}

func manyHeaderNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = "x-h" + strconv.Itoa(i)
	}
	return strings.Join(names, " ")
}
