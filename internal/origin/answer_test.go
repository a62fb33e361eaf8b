package origin

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// TestAgree: Orb's rules, one difference at a time; member order and spacing do not count,
// values do, and both commitments must be present.
func TestAgree(t *testing.T) {
	t.Parallel()
	const base = `{"didDocument":{"id":"did:orb:x","service":[{"id":"#a","serviceEndpoint":"https://a.example"}]},` +
		`"didDocumentMetadata":{"canonicalId":"did:orb:h:x","method":{"anchorOrigin":"https://o.example","updateCommitment":"u","recoveryCommitment":"r"}}}`
	for _, tc := range []struct {
		name, other, differs string
	}{
		{"same", base, ""},
		{"reordered", `{"didDocumentMetadata":{"method":{"recoveryCommitment":"r","updateCommitment":"u","anchorOrigin":"https://o.example"},"canonicalId":"did:orb:h:x"},` +
			`"didDocument":{"service":[{"serviceEndpoint":"https://a.example","id":"#a"}],"id":"did:orb:x"}}`, ""},
		{"document", `{"didDocument":{"id":"did:orb:x"},"didDocumentMetadata":{"canonicalId":"did:orb:h:x","method":{"anchorOrigin":"https://o.example","updateCommitment":"u","recoveryCommitment":"r"}}}`, "document"},
		{"update commitment", `{"didDocument":{"id":"did:orb:x","service":[{"id":"#a","serviceEndpoint":"https://a.example"}]},` +
			`"didDocumentMetadata":{"canonicalId":"did:orb:h:x","method":{"anchorOrigin":"https://o.example","updateCommitment":"v","recoveryCommitment":"r"}}}`, "updateCommitment"},
		{"no recovery commitment", `{"didDocument":{"id":"did:orb:x","service":[{"id":"#a","serviceEndpoint":"https://a.example"}]},` +
			`"didDocumentMetadata":{"canonicalId":"did:orb:h:x","method":{"anchorOrigin":"https://o.example","updateCommitment":"u"}}}`, "recoveryCommitment missing"},
		{"anchor origin", `{"didDocument":{"id":"did:orb:x","service":[{"id":"#a","serviceEndpoint":"https://a.example"}]},` +
			`"didDocumentMetadata":{"canonicalId":"did:orb:h:x","method":{"anchorOrigin":"https://p.example","updateCommitment":"u","recoveryCommitment":"r"}}}`, "anchorOrigin"},
		{"no canonicalId", `{"didDocument":{"id":"did:orb:x","service":[{"id":"#a","serviceEndpoint":"https://a.example"}]},` +
			`"didDocumentMetadata":{"method":{"anchorOrigin":"https://o.example","updateCommitment":"u","recoveryCommitment":"r"}}}`, "canonicalId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseResult([]byte(base))
			require.NoError(t, err)
			b, err := parseResult([]byte(tc.other))
			require.NoError(t, err)
			require.Equal(t, tc.differs, agree(b, a))
		})
	}
}

// TestAnswersOfManyValuesAreRefusedUndecoded: an answer of many small values (4 MiB of "{},"
// listed as operations, of """","" as references, of "[]," as the document) is refused before it
// is decoded, at a cost of its bytes, where decoding took hundreds of MiB; an honest answer of
// the largest size is taken. Not parallel: it measures what the package allocates.
func TestAnswersOfManyValuesAreRefusedUndecoded(t *testing.T) {
	local, err := parseResult([]byte(`{"didDocument":{"id":"did:orb:x"},"didDocumentMetadata":{"method":{"updateCommitment":"u","recoveryCommitment":"r"}}}`))
	require.NoError(t, err)
	fill := func(pre, item, post string) []byte {
		return []byte(pre + strings.Repeat(item, (MaxAnswerBytesDefault-len(pre)-len(post))/len(item)) + post)
	}
	for name, body := range map[string][]byte{
		"operations": fill(`{"didDocumentMetadata":{"method":{"unpublishedOperations":[`, `{},`, `{}]}}}`),
		"references": fill(`{"didDocumentMetadata":{"method":{"publishedOperations":[{"canonicalReference":"x","equivalentReferences":[`, `"",`, `""]}]}}}`),
		"document":   fill(`{"didDocument":[`, `[],`, `[]],"didDocumentMetadata":{"method":{"updateCommitment":"u","recoveryCommitment":"r","unpublishedOperations":[{}]}}}`),
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		answer, err := parseAnswer(body, MaxOperationsDefault)
		if err == nil {
			if _, _, err = answer.operations(MaxOperationsDefault); err == nil {
				agree(answer, local)
			}
		}
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, errInvalid, name)
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "%s: allocated", name)
	}

	// The most an honest origin lists: a document with a few hundred services, and the most
	// operations taken, each of Orb's largest size.
	var services []string
	for i := range 500 {
		services = append(services, fmt.Sprintf(`{"id":"#s%d","type":"LinkedDomains","serviceEndpoint":["https://%d.example/a","https://%d.example/b"]}`, i, i, i))
	}
	ops := make([]sidetree.OrbPublishedOperation, MaxOperationsDefault)
	for i := range ops {
		ops[i] = sidetree.OrbPublishedOperation{Type: sidetree.OperationUpdate, Operation: make([]byte, sidetree.OrbMaxOperationSize),
			CanonicalReference: "uEiA", EquivalentReferences: []string{"hl:uEiA", "hl:uEiA:uoQ"}, AnchorOrigin: "https://o.example"}
	}
	list, err := json.Marshal(ops)
	require.NoError(t, err)
	body := []byte(`{"didDocument":{"id":"did:orb:x","service":[` + strings.Join(services, ",") + `]},"didDocumentMetadata":{"canonicalId":"did:orb:uEiA:x",` +
		`"method":{"published":true,"updateCommitment":"u","recoveryCommitment":"r","anchorOrigin":"https://o.example","publishedOperations":` + string(list) + `}}}`)
	require.Less(t, len(body), MaxAnswerBytesDefault)
	answer, err := parseAnswer(body, MaxOperationsDefault)
	require.NoError(t, err)
	published, _, err := answer.operations(MaxOperationsDefault)
	require.NoError(t, err)
	require.Len(t, published, MaxOperationsDefault)
}
