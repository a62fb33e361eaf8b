package batchfile

import (
	"strconv"
	"strings"

	"github.com/anchord/anchord/internal/sidetree"
)

// Anchor is a parsed anchor string "<operation count>.<core index file CAS URI>".
type Anchor struct {
	// Count is the number of operations in the batch (creates, recovers, deactivates, updates);
	// it is also the "paid" count that bounds what the files may hold.
	Count        int
	CoreIndexURI string
}

// String returns the anchor string.
func (a Anchor) String() string { return strconv.Itoa(a.Count) + "." + a.CoreIndexURI }

// ParseAnchorString applies the reader's rules (reference implementation
// AnchoredDataSerializer): exactly two '.'-separated parts; a count that is a positive decimal
// integer without leading zeros and at most MaxOperations; and, beyond the reference
// implementation, a core index URI that is a valid CAS URI (non-empty, at most MaxCASURILength
// characters, accepted by CheckURIFunc).
func ParseAnchorString(s string, l Limits) (Anchor, error) {
	l = l.withDefaults()
	countPart, uri, ok := strings.Cut(s, ".")
	if !ok || strings.Contains(uri, ".") {
		return Anchor{}, sidetree.Errorf(sidetree.CodeInvalidAnchorString, "anchor string must be <count>.<CAS URI>")
	}
	if !isPositiveDecimal(countPart) {
		return Anchor{}, sidetree.Errorf(sidetree.CodeInvalidAnchorString, "operation count %q is not a positive integer without leading zeros", countPart)
	}
	count, err := strconv.Atoi(countPart)
	if err != nil || count > l.MaxOperations {
		return Anchor{}, sidetree.Errorf(sidetree.CodeOperationCountExceedsLimit, "operation count %s exceeds the limit of %d", countPart, l.MaxOperations)
	}
	if err := checkURI(uri, l); err != nil {
		return Anchor{}, sidetree.Wrap(sidetree.CodeInvalidAnchorString, err, "core index file URI")
	}
	return Anchor{Count: count, CoreIndexURI: uri}, nil
}

// isPositiveDecimal matches ^[1-9]\d*$.
func isPositiveDecimal(s string) bool {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkURI is InputValidator.validateCasFileUri (length) plus the configured check.
func checkURI(uri string, l Limits) error {
	if uri == "" {
		return sidetree.Errorf(sidetree.CodeInvalidCASURI, "CAS URI is empty")
	}
	if len(uri) > l.MaxCASURILength {
		return sidetree.Errorf(sidetree.CodeInvalidCASURI, "CAS URI is longer than %d characters", l.MaxCASURILength)
	}
	if l.CheckURIFunc != nil {
		if err := l.CheckURIFunc(uri); err != nil {
			return sidetree.Wrap(sidetree.CodeInvalidCASURI, err, "CAS URI %q", uri)
		}
	}
	return nil
}
