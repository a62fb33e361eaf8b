package sidetree_test

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// anchorOf returns an anchor's hash (Orb's CID), its multihash, and a hashlink with metadata.
func anchorOf(content string) (hash string, mh []byte, hashlink string) {
	sum := sha256.Sum256([]byte(content))
	mh = append([]byte{0x12, 0x20}, sum[:]...)
	hash = "u" + b64u.EncodeToString(mh)
	// metadata as Orb writes it: multibase base64url of CBOR {0x0f: ["https://…/cas/…"]}
	return hash, mh, "hl:" + hash + ":uoQ1BeCVodHRwczovL29yYi5leGFtcGxlLmNvbS9jYXMvYmFma3JlaQ"
}

func ipfsV1(mh []byte) string {
	return "b" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(append([]byte{0x01, 0x55}, mh...)))
}

func TestParseOrbDIDForms(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("https:anchord.example.com")
	c := &orbClient{t: t, curve: "Ed25519", origin: orbOrigin}
	d, _ := c.create(orbService("s"))
	s := d.suffix
	hash, mh, hl := anchorOf("anchor")
	for _, tc := range []struct{ did, anchor string }{
		{"did:orb:" + hash + ":" + s, hash},
		{"did:orb:uAAA:" + s, ""},
		{"did:orb:" + s, ""},
		{"did:orb:" + hl + ":" + s, hash},
		{"did:orb:hl:" + hash + ":" + s, hash},
		{"did:orb:https:orb.example.com:" + hash + ":" + s, hash},
		{"did:orb:https:orb.example.com:uAAA:" + s, ""},
		{"did:orb:http:127.0.0.2:8080:" + hash + ":" + s, hash},
		{"did:orb:ipfs:" + ipfsV1(mh) + ":" + s, hash},
		{"did:orb:ipfs:" + base58.Encode(mh) + ":" + s, hash},
	} {
		got, err := sidetree.ParseDID(p, tc.did)
		require.NoError(t, err, tc.did)
		require.Equal(t, s, got.Suffix, tc.did)
		require.Equal(t, tc.anchor, got.AnchorHash(), tc.did)
		require.False(t, got.IsLongForm())
	}
	require.Equal(t, hash, sidetree.OrbAnchorHash(hl))
	require.Empty(t, sidetree.OrbAnchorHash("hl:notahash"))

	for _, bad := range []string{
		"did:orb:", "did:orb:" + hash + ":", "did:sidetree:" + s, "did:orb:uBBB:" + s, "did:orb:hl:uAAA:" + s,
		"did:orb:hl:" + hash + ":x:y:" + s, "did:orb:https::" + hash + ":" + s, "did:orb:https:a b:" + hash + ":" + s,
		"did:orb:ipfs:QmNotACid:" + s, "did:orb:ftp:x:" + hash + ":" + s, "did:orb:" + hash + ":" + hash[1:] + "x",
		"did:orb:" + strings.Repeat("u", 3000) + ":" + s,
	} {
		_, err := sidetree.ParseDID(p, bad)
		require.Equal(t, sidetree.CodeInvalidDID, sidetree.CodeOf(err), bad)
	}
}

func TestOrbNamesRendered(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("https:anchord.example.com")
	c := &orbClient{t: t, curve: "P-256", origin: orbOrigin}
	d, create := c.create(orbService("s"))
	op, err := sidetree.ParseOperation(create, p)
	require.NoError(t, err)
	hash, _, hl := anchorOf("anchor")

	type result struct {
		Document struct {
			ID string `json:"id"`
		} `json:"didDocument"`
		Meta struct {
			Canonical  string         `json:"canonicalId"`
			Equivalent []string       `json:"equivalentId"`
			Method     map[string]any `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	parse := func(body []byte) result {
		var r result
		require.NoError(t, json.Unmarshal(body, &r), string(body))
		return r
	}

	// Orb's create answer: the unpublished name, and the domain's name of it.
	r := parse(sidetree.RenderCreateResponse(p, op))
	require.Equal(t, "did:orb:uAAA:"+d.suffix, r.Document.ID)
	require.Equal(t, []string{"did:orb:https:anchord.example.com:uAAA:" + d.suffix}, r.Meta.Equivalent)
	require.Empty(t, r.Meta.Canonical)
	require.Equal(t, false, r.Meta.Method["published"])

	// Published: the id as asked, the canonical name of the latest anchor, its hashlink name.
	st := sidetree.Resolve(p, d.suffix, history(create))
	meta := sidetree.Metadata{CanonicalRef: hash, EquivalentRefs: []string{hl}}
	for _, asked := range []string{"did:orb:uAAA:" + d.suffix, "did:orb:" + hash + ":" + d.suffix, "did:orb:https:orb.example.com:" + hash + ":" + d.suffix} {
		did, err := sidetree.ParseDID(p, asked)
		require.NoError(t, err)
		body, status := sidetree.RenderResolutionWithMetadata(did, st, meta)
		require.Equal(t, sidetree.ResolutionFound, status)
		r = parse(body)
		require.Equal(t, asked, r.Document.ID)
		require.Equal(t, "did:orb:"+hash+":"+d.suffix, r.Meta.Canonical)
		require.Equal(t, []string{"did:orb:" + hash + ":" + d.suffix, "did:orb:" + hl + ":" + d.suffix}, r.Meta.Equivalent)
		require.Equal(t, true, r.Meta.Method["published"])
		require.Equal(t, orbOrigin, r.Meta.Method["anchorOrigin"])
	}

	// A long form not yet anchored: unpublished, named by its unpublished label.
	long, err := sidetree.LongFormDID(p, op)
	require.NoError(t, err)
	state := long[strings.LastIndexByte(long, ':'):]
	for _, asked := range []string{long, "did:orb:uAAA:" + d.suffix + state} {
		did, err := sidetree.ParseDID(p, asked)
		require.NoError(t, err, asked)
		require.True(t, did.IsLongForm())
		body, status := sidetree.RenderResolution(did, nil)
		require.Equal(t, sidetree.ResolutionFound, status)
		r = parse(body)
		require.Equal(t, "did:orb:uAAA:"+d.suffix+state, r.Document.ID)
		require.Equal(t, []string{"did:orb:uAAA:" + d.suffix, "did:orb:https:anchord.example.com:uAAA:" + d.suffix}, r.Meta.Equivalent)
	}

	// Deactivated: 410 with the canonical name.
	st = sidetree.Resolve(p, d.suffix, history(create, c.deactivate(d)))
	did, err := sidetree.ParseDID(p, "did:orb:"+hash+":"+d.suffix)
	require.NoError(t, err)
	body, status := sidetree.RenderResolutionWithMetadata(did, st, meta)
	require.Equal(t, sidetree.ResolutionDeactivated, status)
	require.Equal(t, "did:orb:"+hash+":"+d.suffix, parse(body).Meta.Canonical)
}

func FuzzParseOrbDID(f *testing.F) {
	hash, mh, hl := anchorOf("anchor")
	suffix := "EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A"
	for _, s := range []string{
		"did:orb:" + hash + ":" + suffix, "did:orb:uAAA:" + suffix, "did:orb:" + hl + ":" + suffix,
		"did:orb:https:orb.example.com:" + hash + ":" + suffix, "did:orb:ipfs:" + ipfsV1(mh) + ":" + suffix,
		"did:orb:ipfs:" + base58.Encode(mh) + ":" + suffix, "did:orb:uAAA:" + suffix + ":eyJhIjoxfQ",
	} {
		f.Add(s)
	}
	p := sidetree.OrbProfile("https:anchord.example.com")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := sidetree.ParseDID(p, s)
		if err != nil {
			require.Equal(t, sidetree.CodeOf(err) != "", true)
			return
		}
		require.True(t, strings.HasPrefix(s, "did:orb:"))
		require.True(t, strings.Contains(s, d.Suffix))
		if a := d.AnchorHash(); a != "" {
			_, err := sidetree.DecodeMultihash(a[1:])
			require.NoError(t, err, "an anchor hash is a multihash")
		}
		body, status := sidetree.RenderResolution(d, nil)
		if d.IsLongForm() {
			require.Equal(t, sidetree.ResolutionFound, status)
			require.True(t, json.Valid(body))
		} else {
			require.Equal(t, sidetree.ResolutionNotFound, status)
		}
	})
}

// TestOrbCreateResponseMatchesOrb: testdata/orb holds a create request signed as Orb's client
// signs it (four key types, an object service endpoint, alsoKnownAs) and the answer a real Orb
// server (b105f1ed, external endpoint http://127.0.0.9) gave to it; the did:orb profile answers
// the same request with the same bytes.
func TestOrbCreateResponseMatchesOrb(t *testing.T) {
	t.Parallel()
	req, err := os.ReadFile("testdata/orb/create-request.json")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/orb/create-response.json")
	require.NoError(t, err)
	op, err := sidetree.ParseOperation(req, sidetree.OrbProfile("http:127.0.0.9"))
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(string(want)), string(sidetree.RenderCreateResponse(sidetree.OrbProfile("http:127.0.0.9"), op)))
}

// TestOrbResolutionMatchesOrb: the same DID once Orb had anchored it, resolved at Orb by its
// unpublished name and by its canonical name; given the anchor's hash and hashlink and the
// anchor time Orb reported, the did:orb profile renders the same bytes.
func TestOrbResolutionMatchesOrb(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("http:127.0.0.9")
	req, err := os.ReadFile("testdata/orb/create-request.json")
	require.NoError(t, err)
	op, err := sidetree.ParseOperation(req, p)
	require.NoError(t, err)
	st := sidetree.Resolve(p, op.Suffix, history(req))
	for _, file := range []string{"resolve-uaaa.json", "resolve-canonical.json"} {
		want, err := os.ReadFile("testdata/orb/" + file)
		require.NoError(t, err)
		var orb struct {
			Document struct {
				ID string `json:"id"`
			} `json:"didDocument"`
			Meta struct {
				Equivalent []string `json:"equivalentId"`
				Created    string   `json:"created"`
				VersionID  string   `json:"versionId"`
			} `json:"didDocumentMetadata"`
		}
		require.NoError(t, json.Unmarshal(want, &orb))
		created, err := time.Parse(time.RFC3339, orb.Meta.Created)
		require.NoError(t, err)
		hashlink := strings.TrimSuffix(strings.TrimPrefix(orb.Meta.Equivalent[1], "did:orb:"), ":"+op.Suffix)
		did, err := sidetree.ParseDID(p, orb.Document.ID)
		require.NoError(t, err)
		body, status := sidetree.RenderResolutionWithMetadata(did, st, sidetree.Metadata{
			Created: created, VersionID: orb.Meta.VersionID, CanonicalRef: orb.Meta.VersionID, EquivalentRefs: []string{hashlink},
		})
		require.Equal(t, sidetree.ResolutionFound, status)
		require.Equal(t, strings.TrimSpace(string(want)), string(body), file)
	}
}
