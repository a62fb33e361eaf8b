package vc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blankClique returns a JSON-LD graph of n blank nodes that all link to each other, the shape
// that makes URDNA2015 try every permutation.
func blankClique(n int) []any {
	nodes := make([]any, n)
	for i := range n {
		var links []any
		for j := range n {
			if j != i {
				links = append(links, map[string]any{"@id": fmt.Sprintf("_:b%d", j)})
			}
		}
		nodes[i] = map[string]any{"@id": fmt.Sprintf("_:b%d", i), "https://w3id.org/activityanchors#rel": links}
	}
	return nodes
}

func TestCanonicalizeBoundsBlankNodes(t *testing.T) {
	t.Parallel()

	_, err := canonicalize(map[string]any{"@graph": blankClique(maxBlankNodes)})
	require.NoError(t, err)

	start := time.Now()
	_, err = canonicalize(map[string]any{"@graph": blankClique(maxBlankNodes + 4)})
	require.ErrorIs(t, err, ErrTooComplex)
	require.Less(t, time.Since(start), 5*time.Second, "refused before the permutations, not after")
}

func TestCanonicalizeBoundsStatements(t *testing.T) {
	t.Parallel()

	values := make([]any, maxQuads+1)
	for i := range values {
		values[i] = fmt.Sprintf("v%d", i)
	}
	_, err := canonicalize(map[string]any{
		"@id": "urn:x", "https://w3id.org/activityanchors#rel": values,
	})
	require.ErrorIs(t, err, ErrTooComplex)
}

// A credential whose subjects are a crafted clique of blank nodes is refused by the verifier
// quickly instead of tying it up.
func TestVerifyRefusesPoisonCredential(t *testing.T) {
	t.Parallel()

	signed, err := Sign(testAnchorCredential(t), testKey(1), testProofOptions(1))
	require.NoError(t, err)
	raw, err := signed.MarshalJSON()
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	m["@context"] = append(m["@context"].([]any), map[string]any{
		"link": map[string]any{"@id": "https://w3id.org/activityanchors#rel", "@type": "@id"},
	})
	subjects := blankClique(8)
	for _, s := range subjects {
		n := s.(map[string]any)
		n["id"] = n["@id"]
		delete(n, "@id")
		var ids []any
		for _, l := range n["https://w3id.org/activityanchors#rel"].([]any) {
			ids = append(ids, l.(map[string]any)["@id"])
		}
		delete(n, "https://w3id.org/activityanchors#rel")
		n["link"] = ids
	}
	m["credentialSubject"] = subjects
	b, err := json.Marshal(m)
	require.NoError(t, err)
	c, err := ParseCredential(b)
	require.NoError(t, err)

	start := time.Now()
	err = VerifyProof(context.Background(), c, c.Proofs()[0], testResolver(t, 1))
	require.ErrorIs(t, err, ErrTooComplex)
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestCanonicalizeRefusesInvalidRDF(t *testing.T) {
	t.Parallel()

	// A type that no context defines expands to a relative IRI, which is no valid N-Quad.
	raw, err := testAnchorCredential(t).MarshalJSON()
	require.NoError(t, err)
	bad := strings.Replace(string(raw), `"AnchorCredential"`, `"Anchor Credential"`, 1)
	c, err := ParseCredential([]byte(bad))
	require.NoError(t, err)
	_, err = CreateProof(c, testKey(1), testProofOptions(1))
	require.ErrorIs(t, err, ErrUndefinedTerm)
}
