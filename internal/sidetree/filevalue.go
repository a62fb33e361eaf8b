package sidetree

import "github.com/anchord/anchord/internal/sidetree/jsontree"

// The functions below validate the pieces of batch files that carry operation data, with the
// same rules as the operation requests those pieces are rebuilt into. Package batchfile calls
// them on the trees it parsed; they are exported for it alone.

// ParseSuffixDataValue validates a create reference's suffixData (InputValidator.
// validateSuffixData) and returns it with the DID suffix it hashes to.
func ParseSuffixDataValue(v *jsontree.Value, path string) (*SuffixData, string, error) {
	sd, err := parseSuffixData(v, path)
	if err != nil {
		return nil, "", err
	}
	return sd, HashOut(sd.canonical), nil
}

// ParseReferenceValue validates an operation reference {didSuffix, revealValue}
// (InputValidator.validateOperationReferences).
func ParseReferenceValue(v *jsontree.Value, path string) (suffix, reveal string, err error) {
	if v == nil || v.Kind != jsontree.Object {
		return "", "", Errorf(CodeInvalidProperty, "%s must be an object", path)
	}
	if err := onlyMembers(v, []string{"didSuffix", "revealValue"}, path); err != nil {
		return "", "", err
	}
	s, serr := checkMultihash(v.Member("didSuffix"), path+".didSuffix")
	if serr != nil {
		return "", "", serr
	}
	r, rerr := checkMultihash(v.Member("revealValue"), path+".revealValue")
	if rerr != nil {
		return "", "", rerr
	}
	return s, r, nil
}

// ParseDeltaValue validates a chunk file delta: canonical size within the profile's limit and
// the delta schema (Delta.validateDelta).
func ParseDeltaValue(v *jsontree.Value, p Profile, path string) (*Delta, error) {
	d, err := parseDelta(v, p, path)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ParseProofValue validates the signedData of a proof file entry for an operation of type typ:
// the compact JWS rules and the payload rules of the type's parseSignedDataPayload. For a
// deactivate the payload's didSuffix must equal expectedSuffix, the suffix at the same position
// of the core index file. It returns the compact JWS string.
func ParseProofValue(typ OperationType, signedData *jsontree.Value, p Profile, expectedSuffix, path string) (string, error) {
	_, payloadMembers, ok := signedShape(typ)
	if !ok {
		return "", Errorf(CodeUnknownOperationType, "%s: %q operations have no proofs", path, typ)
	}
	jws, err := parseCompactJWS(signedData, p, path)
	if err != nil {
		return "", err
	}
	op := &Operation{Type: typ, Suffix: expectedSuffix, jws: jws}
	if err := op.parsePayload(payloadMembers, p); err != nil {
		return "", err
	}
	return jws.raw, nil
}
