package sidetree

import (
	"bytes"
	"strings"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// DID is a parsed Sidetree DID of the profile's method.
type DID struct {
	// Method is the method name including any network segment ("ion:test").
	Method string
	// Suffix is the DID's unique suffix.
	Suffix string
	// LongForm is the full DID string when it was given in long form, else "".
	LongForm string
	// Create is the create operation embedded in a long-form DID (nil for short form). It has
	// passed ParseOperation's checks.
	Create *Operation

	// orb is set for a DID parsed under did:orb's names (see names.go).
	orb *orbName
	// short is ShortForm's result when ParseDID had it in the string it parsed, "" otherwise:
	// a resolution renders it twice or more, and building it was one allocation each time.
	short string
}

// ShortForm returns did:<method>:<suffix>.
func (d *DID) ShortForm() string {
	if d.short != "" {
		return d.short
	}
	return "did:" + d.Method + ":" + d.Suffix
}

// IsLongForm reports whether the DID was given in long form.
func (d *DID) IsLongForm() bool { return d.LongForm != "" }

// String returns the DID as given: the long form if it was long, else the short form.
func (d *DID) String() string {
	if d.LongForm != "" {
		return d.LongForm
	}
	return d.ShortForm()
}

// ShortFormDID returns did:<method>:<suffix> for the profile's method.
func ShortFormDID(p Profile, suffix string) string { return "did:" + p.method() + ":" + suffix }

// ParseDID parses a short-form (did:<method>:<suffix>) or long-form
// (did:<method>:<suffix>:<base64url(JCS({delta, suffixData}))>) DID, as the reference
// implementation's Did.create does: the part after the configured prefix is short form if it has
// no ':', else the suffix is everything up to the last ':'. Beyond the reference implementation
// the suffix must be a valid multihash, the initial state must have exactly the members delta and
// suffixData, and the embedded create must pass ParseOperation (so its delta hash must match).
//
// Under did:orb's rules (Profile.Orb) the forms Orb gives out are parsed instead: see names.go.
func ParseDID(p Profile, did string) (*DID, error) {
	if p.Orb {
		return parseOrbDID(p, did)
	}
	method := p.method()
	prefix := "did:" + method + ":"
	rest, ok := strings.CutPrefix(did, prefix)
	if !ok {
		if strings.HasPrefix(did, "did:") {
			// The commonest cause is a client of another method (ion-sdk makes did:ion:…) talking
			// to a node configured for this one: say which method the node serves.
			return nil, Errorf(CodeInvalidDID, "not a DID of the configured method %q: it must start with %q", method, prefix)
		}
		return nil, Errorf(CodeInvalidDID, "DID must start with %q", prefix)
	}
	d := &DID{Method: method}
	encoded := ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		d.Suffix, encoded, d.LongForm = rest[:i], rest[i+1:], did
		d.short = did[:len(prefix)+i]
	} else {
		d.Suffix, d.short = rest, did
	}
	if _, err := DecodeMultihash(d.Suffix); err != nil {
		return nil, Wrap(CodeInvalidDID, err, "DID suffix %s", jsontree.QuoteExcerpt(d.Suffix))
	}
	if d.LongForm == "" {
		return d, nil
	}
	create, err := parseInitialState(encoded, p)
	if err != nil {
		return nil, err
	}
	if create.Suffix != d.Suffix {
		return nil, Errorf(CodeInvalidLongFormDID, "initial state hashes to suffix %s, not %s", create.Suffix, d.Suffix)
	}
	d.Create = create
	return d, nil
}

func parseInitialState(encoded string, p Profile) (*Operation, *Error) {
	raw, err := decodeBase64URLStrict(encoded)
	if err != nil {
		return nil, Wrap(CodeInvalidLongFormDID, err, "initial state")
	}
	v, err := jsontree.Parse(raw)
	if err != nil {
		return nil, Wrap(CodeInvalidLongFormDID, err, "initial state is not JSON")
	}
	if !bytes.Equal(v.AppendCanonical(make([]byte, 0, len(raw))), raw) {
		return nil, Errorf(CodeInvalidLongFormDID, "initial state is not in JCS canonical form")
	}
	if v.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidLongFormDID, "initial state must be an object")
	}
	if ierr := exactMembers(&v, []string{"delta", "suffixData"}, nil, CodeInvalidLongFormDID, "initial state"); ierr != nil {
		return nil, ierr
	}
	req := make([]byte, 0, len(raw)+32)
	req = append(req, `{"type":"create","suffixData":`...)
	req = v.Member("suffixData").AppendCompact(req)
	req = append(req, `,"delta":`...)
	req = v.Member("delta").AppendCompact(req)
	req = append(req, '}')
	op, perr := parseOperation(req, p, modeRequest)
	if perr != nil {
		return nil, Wrap(CodeInvalidLongFormDID, perr, "initial state")
	}
	return op, nil
}

// LongFormDID returns the long-form DID of a create operation parsed by ParseOperation.
func LongFormDID(p Profile, create *Operation) (string, error) {
	if create == nil || create.Type != OperationCreate || create.Delta == nil {
		return "", Errorf(CodeInvalidRequest, "a long-form DID needs a create operation with a delta")
	}
	// {"delta":…,"suffixData":…} is already in JCS member order.
	state := make([]byte, 0, len(create.Delta.canonical)+len(create.SuffixData.canonical)+30)
	state = append(state, `{"delta":`...)
	state = append(state, create.Delta.canonical...)
	state = append(state, `,"suffixData":`...)
	state = append(state, create.SuffixData.canonical...)
	state = append(state, '}')
	return ShortFormDID(p, create.Suffix) + ":" + encodeBase64URL(state), nil
}
