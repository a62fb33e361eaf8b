package origin

import (
	"testing"

	"github.com/stretchr/testify/require"
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
