package sidetree

// Orb's resolver can list a DID's operations in the method metadata of its result:
// unpublishedOperations (accepted, not yet anchored) with --include-unpublished-operations-in-metadata,
// publishedOperations (anchored) with --include-published-operations-in-metadata. A domain that
// resolves the DID from its anchor origin (--resolve-from-anchor-origin) merges the origin's
// unpublished operations, and its published ones newer than its own head, into its own
// resolution. The members and their encoding are Orb's (sidetree-go's PublishedOperation and
// UnpublishedOperation): operation is the request's bytes in standard base64, the times are Unix
// seconds, and protocolVersion is the genesis time of Orb's protocol v1.0, 0.

// OrbProtocolVersion is the protocolVersion Orb writes for an operation of its protocol v1.0.
const OrbProtocolVersion = 0

// OrbPublishedOperation is an anchored operation as Orb lists it.
type OrbPublishedOperation struct {
	Type OperationType `json:"type"`
	// Operation is the operation request.
	Operation []byte `json:"operation"`
	// TransactionTime is when the anchor's credential was issued (Unix seconds); Orb orders a
	// DID's operations by it.
	TransactionTime uint64 `json:"transactionTime"`
	// TransactionNumber is always 0 at Orb.
	TransactionNumber uint64 `json:"transactionNumber"`
	ProtocolVersion   uint64 `json:"protocolVersion"`
	// CanonicalReference is the anchor's hash (the DID names it did:orb:<hash>:<suffix>);
	// EquivalentReferences its hashlink.
	CanonicalReference   string   `json:"canonicalReference,omitempty"`
	EquivalentReferences []string `json:"equivalentReferences,omitempty"`
	// AnchorOrigin is the DID's anchor origin when the operation was accepted.
	AnchorOrigin string `json:"anchorOrigin,omitempty"`
}

// OrbUnpublishedOperation is an accepted operation not yet anchored, as Orb lists it.
type OrbUnpublishedOperation struct {
	Type      OperationType `json:"type"`
	Operation []byte        `json:"operation"`
	// TransactionTime is when the operation was accepted (Unix seconds).
	TransactionTime uint64 `json:"transactionTime"`
	ProtocolVersion uint64 `json:"protocolVersion"`
	AnchorOrigin    string `json:"anchorOrigin,omitempty"`
}
