package activity

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	testAuthor  = "https://a.example/services/orb"
	testSuffix1 = "EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A"
	testSuffix2 = "EiBJkmG3I3U8fU6MBaWhm3dcwGRr7CHFW5_-7zxbH2Q5kA"
	testSuffix3 = "EiCw2CM9Y3x8z0k9cBfN3m3qyq8nZQ3iS1pWkYbq1n9bGg"
)

func testContent() AnchorContent {
	prev := NewHashlink([]byte("previous anchor linkset"), "https://a.example/cas/prev", "ipfs://QmPrev")
	return AnchorContent{
		CoreIndex: NewHashlink([]byte(`{"operations":{}}`), "https://a.example/cas/core"),
		Author:    testAuthor,
		Operations: []SuffixAnchor{
			{Suffix: testSuffix1},
			{Suffix: testSuffix2, Previous: prev},
			{Suffix: testSuffix3, Previous: prev},
		},
	}
}

// testCredential is a stand-in anchor credential: the shape of Orb's, without a proof.
func testCredential(anchor, coreIndex string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"@context":          []string{ContextCredentials, ContextActivityAnchors},
		"id":                "https://a.example/vc/1",
		"type":              "VerifiableCredential",
		"issuer":            "https://a.example",
		"issuanceDate":      "2023-05-01T10:00:00Z",
		"credentialSubject": NewCredentialSubject(anchor, coreIndex),
	})
}

func testAnchorLink(t *testing.T, mediaType string) *Link {
	t.Helper()
	link, err := BuildAnchorLink(testContent(), mediaType, testCredential)
	require.NoError(t, err)
	return link
}

func TestBuildAnchorLinkLayout(t *testing.T) {
	t.Parallel()
	for _, mediaType := range []string{MediaTypeGzipBase64, MediaTypeJSON} {
		t.Run(mediaType, func(t *testing.T) {
			t.Parallel()
			c := testContent()
			link := testAnchorLink(t, mediaType)
			require.NoError(t, link.Validate())
			require.True(t, strings.HasPrefix(link.Original[0].HRef, "data:"+mediaType+","))

			// The anchor is "hl:u" + base64url(0x12 0x20 ‖ sha256(decoded original)): the hash is
			// over the JSON text, not over the gzip bytes or the data URI.
			original, err := link.Original[0].Content(0)
			require.NoError(t, err)
			sum := sha256.Sum256(original)
			require.Equal(t, "hl:u"+base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, sum[:]...)), link.Anchor)

			// The original is JCS of Orb's content object, written out here member by member.
			core, err := ParseHashlink(c.CoreIndex)
			require.NoError(t, err)
			prev, err := ParseHashlink(c.Operations[1].Previous)
			require.NoError(t, err)
			want := `{"linkset":[{"anchor":"` + core.Anchor() + `","author":[{"href":"` + testAuthor + `"}],` +
				`"item":[{"href":"did:orb:uAAA:` + testSuffix1 + `"},` +
				`{"href":"did:orb:` + prev.ResourceHash() + `:` + testSuffix2 + `","previous":["` + prev.Anchor() + `"]},` +
				`{"href":"did:orb:` + prev.ResourceHash() + `:` + testSuffix3 + `","previous":["` + prev.Anchor() + `"]}],` +
				`"profile":[{"href":"https://w3id.org/orb#v0"}]}]}`
			require.Equal(t, want, string(original))

			related, err := link.Related[0].Content(0)
			require.NoError(t, err)
			require.Equal(t, `{"linkset":[{"anchor":"`+link.Anchor+`","profile":[{"href":"https://w3id.org/orb#v0"}],`+
				`"up":[{"href":"`+c.Operations[1].Previous+`"}],"via":[{"href":"`+c.CoreIndex+`"}]}]}`, string(related))

			vc, err := link.Replies[0].Content(0)
			require.NoError(t, err)
			var cred struct {
				Subject CredentialSubject `json:"credentialSubject"`
			}
			require.NoError(t, json.Unmarshal(vc, &cred))
			require.Equal(t, link.Anchor, cred.Subject.HRef)
			require.Equal(t, core.Anchor(), cred.Subject.Anchor)
			require.NoError(t, cred.Subject.Check(link))
			require.Equal(t, MediaTypeJSONLD, link.Replies[0].Type)

			got, err := link.AnchorContent()
			require.NoError(t, err)
			c.Profile = ProfileOrbV0
			require.Equal(t, &c, got)
		})
	}
}

func TestBuildAnchorLinkErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name   string
		mutate func(*AnchorContent)
		cred   func(anchor, coreIndex string) ([]byte, error)
		media  string
		want   string
	}{
		{"no operations", func(c *AnchorContent) { c.Operations = nil }, testCredential, MediaTypeGzipBase64, "no operations"},
		{"bad core index", func(c *AnchorContent) { c.CoreIndex = "QmCore" }, testCredential, MediaTypeGzipBase64, "core index"},
		{"bad author", func(c *AnchorContent) { c.Author = "a.example" }, testCredential, MediaTypeGzipBase64, "author"},
		{"other profile", func(c *AnchorContent) { c.Profile = "https://w3id.org/orb#v1" }, testCredential, MediaTypeGzipBase64, "not supported"},
		{"empty suffix", func(c *AnchorContent) { c.Operations[0].Suffix = "" }, testCredential, MediaTypeGzipBase64, "suffix"},
		{"bad previous", func(c *AnchorContent) { c.Operations[1].Previous = "hl:x" }, testCredential, MediaTypeGzipBase64, "previous anchor of"},
		{"credential fails", func(*AnchorContent) {}, func(string, string) ([]byte, error) { return nil, boom }, MediaTypeGzipBase64, "boom"},
		{"credential not JSON", func(*AnchorContent) {}, func(string, string) ([]byte, error) { return []byte("{"), nil }, MediaTypeGzipBase64, "credential"},
		{"media type", func(*AnchorContent) {}, testCredential, "text/plain", "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testContent()
			tt.mutate(&c)
			link, err := BuildAnchorLink(c, tt.media, tt.cred)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, link)
		})
	}
}

func TestAnchorContentRejects(t *testing.T) {
	t.Parallel()
	encode := func(t *testing.T, ls string) Ref {
		uri, err := NewDataURI([]byte(ls), MediaTypeGzipBase64)
		require.NoError(t, err)
		return Ref{HRef: uri, Type: MediaTypeLinkset}
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, l *Link)
		want   string
	}{
		{"profile", func(_ *testing.T, l *Link) { l.Profile = Refs{{HRef: "https://x.example/p"}} }, "not supported"},
		{"no related", func(_ *testing.T, l *Link) { l.Related = nil }, "needs original and related"},
		{"related of the wrong type", func(_ *testing.T, l *Link) { l.Related[0].Type = MediaTypeJSONLD }, "reference type"},
		{"original not a data URI", func(_ *testing.T, l *Link) { l.Original[0].HRef = "https://a.example/cas/x" }, "not a data URI"},
		{"related anchor differs", func(t *testing.T, l *Link) {
			l.Related[0] = encode(t, `{"linkset":[{"anchor":"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ"}]}`)
		}, "is not the link's anchor"},
		{"via unrelated to the original", func(t *testing.T, l *Link) {
			l.Related[0] = encode(t, `{"linkset":[{"anchor":"`+l.Anchor+`","via":[{"href":"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ"}]}]}`)
		}, "is not related"},
		{"previous not in up", func(t *testing.T, l *Link) {
			related, err := l.Related[0].Linkset()
			require.NoError(t, err)
			related.Linkset[0].Up = nil
			b, err := json.Marshal(related)
			require.NoError(t, err)
			l.Related[0] = encode(t, string(b))
		}, "is not in related.up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			link := testAnchorLink(t, MediaTypeGzipBase64)
			tt.mutate(t, link)
			got, err := link.AnchorContent()
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, got)
		})
	}
}

func TestCredentialSubjectCheck(t *testing.T) {
	t.Parallel()
	link := testAnchorLink(t, MediaTypeGzipBase64)
	core, err := ParseHashlink(testContent().CoreIndex)
	require.NoError(t, err)
	good := NewCredentialSubject(link.Anchor, core.Anchor())
	require.NoError(t, good.Check(link))
	for name, mutate := range map[string]func(*CredentialSubject){
		"href":    func(s *CredentialSubject) { s.HRef = core.Anchor() },
		"anchor":  func(s *CredentialSubject) { s.Anchor = link.Anchor },
		"profile": func(s *CredentialSubject) { s.Profile = "https://x.example" },
		"rel":     func(s *CredentialSubject) { s.Rel = "item" },
	} {
		s := good
		mutate(&s)
		require.ErrorIs(t, s.Check(link), ErrInvalid, name)
	}
}
