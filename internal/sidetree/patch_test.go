package sidetree

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

func parsePatchesJSON(t *testing.T, s string) []Patch {
	t.Helper()
	v, err := jsontree.Parse([]byte(s))
	require.NoError(t, err)
	patches, perr := parsePatches(&v, DefaultProfile(), "patches")
	require.Nil(t, perr)
	return patches
}

func keyIDs(d Document) []string {
	ids := []string{}
	for _, k := range d.PublicKeys {
		ids = append(ids, k.ID+":"+k.Type)
	}
	return ids
}

func svcIDs(d Document) []string {
	if d.Services == nil {
		return nil
	}
	ids := []string{}
	for _, s := range d.Services {
		ids = append(ids, s.ID+":"+s.Type)
	}
	return ids
}

const (
	keyA = `{"id":"a","type":"t1","publicKeyJwk":{"kty":"EC"}}`
	keyB = `{"id":"b","type":"t1","publicKeyJwk":{"kty":"EC"}}`
	svcA = `{"id":"a","type":"s1","serviceEndpoint":"https://a"}`
	svcB = `{"id":"b","type":"s1","serviceEndpoint":"https://b"}`
)

func TestApplyPatches(t *testing.T) {
	t.Parallel()
	start := `[{"action":"replace","document":{"publicKeys":[` + keyA + `,` + keyB + `],"services":[` + svcA + `,` + svcB + `]}}]`
	for _, tc := range []struct {
		name     string
		patches  string
		keys     []string
		services []string
	}{
		{"replace", `[]`, []string{"a:t1", "b:t1"}, []string{"a:s1", "b:s1"}},
		{"replace without services has none", `[{"action":"replace","document":{}}]`, []string{}, nil},
		{"replace with empty services keeps the member", `[{"action":"replace","document":{"services":[]}}]`, []string{}, []string{}},
		{"add-public-keys overwrites in place", `[{"action":"add-public-keys","publicKeys":[{"id":"c","type":"t2","publicKeyJwk":{}},{"id":"a","type":"t2","publicKeyJwk":{}}]}]`,
			[]string{"a:t2", "b:t1", "c:t2"}, []string{"a:s1", "b:s1"}},
		{"remove-public-keys ignores unknown ids", `[{"action":"remove-public-keys","ids":["a","zz"]}]`, []string{"b:t1"}, []string{"a:s1", "b:s1"}},
		{"add-services overwrites in place", `[{"action":"add-services","services":[{"id":"c","type":"s2","serviceEndpoint":{}},{"id":"b","type":"s2","serviceEndpoint":"https://x"}]}]`,
			[]string{"a:t1", "b:t1"}, []string{"a:s1", "b:s2", "c:s2"}},
		{"remove all services leaves an empty list", `[{"action":"remove-services","ids":["a","b"]}]`, []string{"a:t1", "b:t1"}, []string{}},
		{"patches apply in order", `[{"action":"remove-services","ids":["a"]},{"action":"add-services","services":[` + svcA + `]},{"action":"replace","document":{"publicKeys":[` + keyB + `]}},{"action":"add-public-keys","publicKeys":[` + keyA + `]}]`,
			[]string{"b:t1", "a:t1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := applyPatches(Document{}, parsePatchesJSON(t, start))
			beforeKeys, beforeSvcs := keyIDs(before), svcIDs(before)
			after := applyPatches(before, parsePatchesJSON(t, tc.patches))
			require.Equal(t, tc.keys, keyIDs(after))
			require.Equal(t, tc.services, svcIDs(after))
			// The input document is never modified.
			require.Equal(t, beforeKeys, keyIDs(before))
			require.Equal(t, beforeSvcs, svcIDs(before))
		})
	}
}

func TestApplyPatchesToEmptyDocument(t *testing.T) {
	t.Parallel()
	// Removing from a document without keys or services changes nothing, including absence.
	d := applyPatches(Document{}, parsePatchesJSON(t, `[{"action":"remove-services","ids":["a"]},{"action":"remove-public-keys","ids":["a"]}]`))
	require.Nil(t, d.Services)
	require.Nil(t, d.PublicKeys)
	d = applyPatches(Document{}, parsePatchesJSON(t, `[{"action":"add-services","services":[]}]`))
	require.NotNil(t, d.Services)
	require.Empty(t, d.Services)
}

func TestPublicKeyKeepsJWKOrder(t *testing.T) {
	t.Parallel()
	patches := parsePatchesJSON(t, `[{"action":"add-public-keys","publicKeys":[{"id":"k","type":"t","publicKeyJwk":{"y":"1","x":"2","kty":"EC","2":"n"},"purposes":["keyAgreement","authentication"]}]}]`)
	k := patches[0].PublicKeys[0]
	// JSON.stringify order: array-index names first, then insertion order.
	require.Equal(t, `{"2":"n","y":"1","x":"2","kty":"EC"}`, string(k.JWK))
	require.Equal(t, []string{"keyAgreement", "authentication"}, k.Purposes)
}
