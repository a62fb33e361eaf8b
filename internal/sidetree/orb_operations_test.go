package sidetree_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// orbAnchoredOperation is sidetree-go's AnchoredOperation, the type Orb's resolver decodes both
// lists into when it resolves a DID from its anchor origin.
type orbAnchoredOperation struct {
	Type                 string   `json:"type"`
	UniqueSuffix         string   `json:"uniqueSuffix"`
	OperationRequest     []byte   `json:"operation"`
	TransactionTime      uint64   `json:"transactionTime"`
	TransactionNumber    uint64   `json:"transactionNumber"`
	ProtocolVersion      uint64   `json:"protocolVersion"`
	CanonicalReference   string   `json:"canonicalReference,omitempty"`
	EquivalentReferences []string `json:"equivalentReferences,omitempty"`
	AnchorOrigin         any      `json:"anchorOrigin,omitempty"`
}

// TestRenderOrbOperationLists: the operation lists of a did:orb result are written into the
// method metadata with Orb's members, the request in standard base64 as Go's encoder writes a
// []byte, and decode into the type Orb's resolver reads them with; without them the result is
// the one Orb writes by default.
func TestRenderOrbOperationLists(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("http:127.0.0.9")
	req, err := os.ReadFile("testdata/orb/create-request.json")
	require.NoError(t, err)
	op, err := sidetree.ParseOperation(req, p)
	require.NoError(t, err)
	st := sidetree.Resolve(p, op.Suffix, history(req))
	hash, _, hashlink := anchorOf("anchor")
	did, err := sidetree.ParseDID(p, "did:orb:"+hash+":"+op.Suffix)
	require.NoError(t, err)
	meta := sidetree.Metadata{Created: time.Unix(1700000000, 0), CanonicalRef: hash, EquivalentRefs: []string{hashlink}, VersionID: hash}

	plain, _ := sidetree.RenderResolutionWithMetadata(did, st, meta)
	require.NotContains(t, string(plain), "Operations")

	update := []byte(`{"type":"update","didSuffix":"` + op.Suffix + `"}`)
	meta.PublishedOps = []sidetree.OrbPublishedOperation{{
		Type: sidetree.OperationCreate, Operation: op.Request, TransactionTime: 1700000000,
		CanonicalReference: hash, EquivalentReferences: []string{hashlink}, AnchorOrigin: op.AnchorOrigin,
	}}
	meta.UnpublishedOps = []sidetree.OrbUnpublishedOperation{{Type: sidetree.OperationUpdate, Operation: update, TransactionTime: 1700000042}}
	body, status := sidetree.RenderResolutionWithMetadata(did, st, meta)
	require.Equal(t, sidetree.ResolutionFound, status)
	var withLists, without map[string]any
	require.NoError(t, json.Unmarshal(body, &withLists))
	require.NoError(t, json.Unmarshal(plain, &without))
	method := withLists["didDocumentMetadata"].(map[string]any)["method"].(map[string]any)
	delete(method, "publishedOperations")
	delete(method, "unpublishedOperations")
	require.Equal(t, without, withLists, "the lists are all that changes")

	var r struct {
		Meta struct {
			Method map[string]json.RawMessage `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	require.NoError(t, json.Unmarshal(body, &r))
	var published, unpublished []orbAnchoredOperation
	require.NoError(t, json.Unmarshal(r.Meta.Method["publishedOperations"], &published))
	require.NoError(t, json.Unmarshal(r.Meta.Method["unpublishedOperations"], &unpublished))
	require.Equal(t, []orbAnchoredOperation{{
		Type: "create", OperationRequest: op.Request, TransactionTime: 1700000000, CanonicalReference: hash,
		EquivalentReferences: []string{hashlink}, AnchorOrigin: op.AnchorOrigin,
	}}, published)
	require.Equal(t, []orbAnchoredOperation{{Type: "update", OperationRequest: update, TransactionTime: 1700000042}}, unpublished)

	var members []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Meta.Method["unpublishedOperations"], &members))
	require.Len(t, members[0], 4, "an unpublished operation has type, operation, transactionTime and protocolVersion: %s", r.Meta.Method["unpublishedOperations"])
	require.NoError(t, json.Unmarshal(r.Meta.Method["publishedOperations"], &members))
	require.Len(t, members[0], 8, "a published operation adds transactionNumber, canonicalReference, equivalentReferences and anchorOrigin")
}
