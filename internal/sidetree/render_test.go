package sidetree_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// history anchors each request in its own anchor, in order.
func history(bodies ...[]byte) []sidetree.AnchoredOperation {
	ops := make([]sidetree.AnchoredOperation, len(bodies))
	for i, b := range bodies {
		ops[i] = sidetree.AnchoredOperation{Sequence: uint64(i + 1), Request: b}
	}
	return ops
}

func TestRenderDIFResolutions(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	v := difDIDs(t)
	for _, tc := range []struct {
		vector string
		did    string
		ops    []string
		status sidetree.ResolutionStatus
	}{
		{"afterCreate", v.ShortFormDid, []string{"create"}, sidetree.ResolutionFound},
		{"afterUpdate", v.ShortFormDid, []string{"create", "update"}, sidetree.ResolutionFound},
		{"afterRecover", v.ShortFormDid, []string{"create", "recover"}, sidetree.ResolutionFound},
		{"afterDeactivate", v.ShortFormDid, []string{"create", "recover", "deactivate"}, sidetree.ResolutionDeactivated},
		{"longFormResponseDidDocument", v.LongFormDid, nil, sidetree.ResolutionFound},
	} {
		t.Run(tc.vector, func(t *testing.T) {
			t.Parallel()
			var bodies [][]byte
			for _, name := range tc.ops {
				// Resolution reads the stored form, as the server stores it.
				bodies = append(bodies, mustParse(t, difOperation(t, name)).Request)
			}
			st := sidetree.Resolve(p, difSuffix, history(bodies...))
			if len(bodies) == 0 {
				require.Nil(t, st)
			}
			did, err := sidetree.ParseDID(p, tc.did)
			require.NoError(t, err)
			body, status := sidetree.RenderResolution(did, st)
			require.Equal(t, tc.status, status)
			requireSameJSON(t, readFile(t, "dif/resolution/"+tc.vector+".json"), body)
		})
	}
}

func TestRenderNotFound(t *testing.T) {
	t.Parallel()
	did, err := sidetree.ParseDID(sidetree.DefaultProfile(), difDIDs(t).ShortFormDid)
	require.NoError(t, err)
	body, status := sidetree.RenderResolution(did, nil)
	require.Nil(t, body)
	require.Equal(t, sidetree.ResolutionNotFound, status)
}

// A published long-form DID shows the anchored state under the long-form id, with both
// canonicalId and equivalentId.
func TestRenderPublishedLongForm(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	v := difDIDs(t)
	did, err := sidetree.ParseDID(p, v.LongFormDid)
	require.NoError(t, err)
	st := sidetree.Resolve(p, difSuffix, history(difOperation(t, "create"), difOperation(t, "update")))
	body, status := sidetree.RenderResolution(did, st)
	require.Equal(t, sidetree.ResolutionFound, status)
	var got struct {
		DIDDocument struct {
			ID                 string `json:"id"`
			VerificationMethod []struct {
				Controller string `json:"controller"`
			} `json:"verificationMethod"`
		} `json:"didDocument"`
		Metadata map[string]any `json:"didDocumentMetadata"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, v.LongFormDid, got.DIDDocument.ID)
	require.Len(t, got.DIDDocument.VerificationMethod, 2)
	require.Equal(t, v.LongFormDid, got.DIDDocument.VerificationMethod[1].Controller)
	require.Equal(t, v.ShortFormDid, got.Metadata["canonicalId"])
	require.Equal(t, []any{v.ShortFormDid}, got.Metadata["equivalentId"])
	require.Equal(t, map[string]any{"published": true, "recoveryCommitment": difRecoveryCommit, "updateCommitment": difUpdateNextCommit}, got.Metadata["method"])
}

// The create response is afterCreate with published false (reference implementation
// handleCreateRequest).
func TestRenderCreateResponse(t *testing.T) {
	t.Parallel()
	var want map[string]any
	require.NoError(t, json.Unmarshal(readFile(t, "dif/resolution/afterCreate.json"), &want))
	want["didDocumentMetadata"].(map[string]any)["method"].(map[string]any)["published"] = false
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	got := sidetree.RenderCreateResponse(sidetree.DefaultProfile(), mustParse(t, difOperation(t, "create")))
	var gotMap map[string]any
	require.NoError(t, json.Unmarshal(got, &gotMap))
	require.Equal(t, want, gotMap, "%s vs %s", wantJSON, got)
}

// A state whose create had no usable delta renders without updateCommitment, keys or services.
func TestRenderEmptyDocument(t *testing.T) {
	t.Parallel()
	r := decodeRequest(t, difOperation(t, "create"))
	r.delta()["patches"] = []any{} // no longer matches suffixData.deltaHash
	p := sidetree.DefaultProfile()
	st := sidetree.Resolve(p, difSuffix, history(r.bytes(t)))
	require.NotNil(t, st)
	did, err := sidetree.ParseDID(p, difDIDs(t).ShortFormDid)
	require.NoError(t, err)
	body, status := sidetree.RenderResolution(did, st)
	require.Equal(t, sidetree.ResolutionFound, status)
	want := `{"@context":"https://w3id.org/did-resolution/v1","didDocument":{"id":"did:sidetree:` + difSuffix +
		`","@context":["https://www.w3.org/ns/did/v1",{"@base":"did:sidetree:` + difSuffix + `"}]},"didDocumentMetadata":{"canonicalId":"did:sidetree:` +
		difSuffix + `","method":{"published":true,"recoveryCommitment":"` + difRecoveryCommit + `"}}}`
	require.Equal(t, want, string(body))
}

// Metadata adds DID Resolution's version members to didDocumentMetadata, next to the reference
// implementation's, for a live and a deactivated DID; created is the create's anchor.
func TestRenderMetadata(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	did, err := sidetree.ParseDID(p, difDIDs(t).ShortFormDid)
	require.NoError(t, err)
	created := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.FixedZone("x", 3600))
	m := sidetree.Metadata{
		Created: created, Updated: created.Add(90 * time.Second), VersionID: "QmVersion2",
		NextUpdate: created.Add(3 * time.Minute), NextVersionID: "QmVersion3",
	}
	for _, tc := range []struct {
		ops    []string
		status sidetree.ResolutionStatus
	}{
		{[]string{"create", "update"}, sidetree.ResolutionFound},
		{[]string{"create", "recover", "deactivate"}, sidetree.ResolutionDeactivated},
	} {
		var bodies [][]byte
		for _, name := range tc.ops {
			bodies = append(bodies, mustParse(t, difOperation(t, name)).Request)
		}
		st := sidetree.Resolve(p, difSuffix, history(bodies...))
		require.Equal(t, uint64(1), st.CreateSequence)
		require.Equal(t, uint64(len(bodies)), st.LastSequence)
		body, status := sidetree.RenderResolutionWithMetadata(did, st, m)
		require.Equal(t, tc.status, status)
		var got struct {
			Metadata map[string]any `json:"didDocumentMetadata"`
		}
		require.NoError(t, json.Unmarshal(body, &got), "%s", body)
		require.Equal(t, "2026-01-02T02:04:05Z", got.Metadata["created"], "UTC, whole seconds")
		require.Equal(t, "2026-01-02T02:05:35Z", got.Metadata["updated"])
		require.Equal(t, "QmVersion2", got.Metadata["versionId"])
		require.Equal(t, "2026-01-02T02:07:05Z", got.Metadata["nextUpdate"])
		require.Equal(t, "QmVersion3", got.Metadata["nextVersionId"])
		require.Equal(t, did.ShortForm(), got.Metadata["canonicalId"])

		plain, _ := sidetree.RenderResolution(did, st)
		zero, _ := sidetree.RenderResolutionWithMetadata(did, st, sidetree.Metadata{})
		require.Equal(t, plain, zero, "zero metadata renders the reference implementation's result")
	}
}

// TestRenderRelationships: the verification relationships follow the keys, in the order their
// purposes are first seen, each listing the keys that serve it in the keys' order, for any keys
// a state may hold (the decoder reads purposes that parsing would refuse, duplicates and
// unknown names among them). The model is the renderer as it was before it stopped collecting
// the relationships into slices.
func TestRenderRelationships(t *testing.T) {
	t.Parallel()
	did, err := sidetree.ParseDID(sidetree.DefaultProfile(), "did:sidetree:EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A")
	require.NoError(t, err)
	render := func(keys []sidetree.PublicKey) string {
		st := &sidetree.State{Suffix: did.Suffix, Published: true, RecoveryCommitment: "r", Document: sidetree.Document{PublicKeys: keys}}
		body, status := sidetree.RenderResolution(did, st)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.True(t, json.Valid(body), string(body))
		rest := string(body[strings.Index(string(body), `"verificationMethod":[`):])
		return rest[strings.Index(rest, "}]")+2 : strings.Index(rest, `},"didDocumentMetadata"`)]
	}
	model := func(keys []sidetree.PublicKey) string {
		var purposes []string
		var refs [][]string
		for _, k := range keys {
			for _, purpose := range k.Purposes {
				j := slices.Index(purposes, purpose)
				if j < 0 {
					purposes, refs = append(purposes, purpose), append(refs, nil)
					j = len(purposes) - 1
				}
				refs[j] = append(refs[j], "#"+k.ID)
			}
		}
		var b strings.Builder
		for i, purpose := range purposes {
			list, err := json.Marshal(refs[i])
			require.NoError(t, err)
			fmt.Fprintf(&b, ",%q:%s", purpose, list)
		}
		return b.String()
	}
	key := func(id string, purposes ...string) sidetree.PublicKey {
		return sidetree.PublicKey{ID: id, Type: "JsonWebKey2020", Purposes: purposes, JWK: []byte(`{"kty":"OKP"}`)}
	}
	keys := []sidetree.PublicKey{
		key("k1", "authentication", "assertionMethod"), key("k2", "keyAgreement", "authentication"),
		{ID: "k3", Type: "JsonWebKey2020", Purposes: []string{}, JWK: []byte(`{"kty":"OKP"}`)},
		{ID: "k4", Type: "JsonWebKey2020", JWK: []byte(`{"kty":"OKP"}`)}, key("k5", "assertionMethod"),
	}
	require.Equal(t, `,"authentication":["#k1","#k2"],"assertionMethod":["#k1","#k5"],"keyAgreement":["#k2"]`, render(keys))
	require.Empty(t, render(keys[2:4]))

	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation", "keyAgreement", "a", "b", "c", "d", "e", "f"}
	for range 500 {
		keys := make([]sidetree.PublicKey, 1+rng.IntN(12))
		for i := range keys {
			var purposes []string
			for range rng.IntN(6) {
				purposes = append(purposes, names[rng.IntN(len(names))])
			}
			keys[i] = key("k"+strconv.Itoa(i), purposes...)
		}
		require.Equal(t, model(keys), render(keys))
	}
}
