package sidetree

import (
	"net/url"
	"strconv"
	"unicode/utf16"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// Document is the internal DID state model of the reference implementation: public keys and
// services, nothing else. It is immutable once built; patches produce new values.
type Document struct {
	PublicKeys []PublicKey
	// Services is nil when the document has no "services" member and non-nil (possibly empty)
	// when it has one; only in the second case does the resolution result carry "service".
	Services []Service
	// AlsoKnownAs are the document's alsoKnownAs URIs, in the order added (Orb's
	// add-also-known-as patch); nil when none.
	AlsoKnownAs []string
}

// PublicKey is one entry of a document's publicKeys.
type PublicKey struct {
	ID   string
	Type string
	// Purposes is nil when the entry has no "purposes" member.
	Purposes []string
	// JWK is the publicKeyJwk object in compact JSON, members in the order received.
	JWK []byte
}

// Service is one entry of a document's services.
type Service struct {
	ID   string
	Type string
	// Endpoint is the serviceEndpoint value in compact JSON: a string or an object.
	Endpoint []byte
}

// Limits on document entries (reference implementation DocumentComposer).
const (
	maxIDLength          = 50
	maxServiceTypeLength = 30
)

// isPurpose reports whether s is one of the five verification relationships a key may serve.
func isPurpose(s string) bool {
	switch s {
	case "authentication", "assertionMethod", "capabilityInvocation", "capabilityDelegation", "keyAgreement":
		return true
	}
	return false
}

// isPrivateJWKMember reports JWK members that carry private key material (RFC 7518 §6.2.2,
// §6.3.2, §6.4.1, RFC 8037 §2). The reference implementation does not look inside publicKeyJwk;
// we refuse to publish a private key in a DID document.
func isPrivateJWKMember(name string) bool {
	switch name {
	case "d", "p", "q", "dp", "dq", "qi", "oth", "k":
		return true
	}
	return false
}

// parsePublicKeys validates a publicKeys array (reference implementation validatePublicKeys).
func parsePublicKeys(v *jsontree.Value, path string) ([]PublicKey, *Error) {
	if v == nil {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.Array {
		return nil, Errorf(CodeInvalidPublicKey, "%s must be an array, not %s", path, v.TypeName())
	}
	keys := make([]PublicKey, 0, len(v.Elems))
	for i := range v.Elems {
		e := &v.Elems[i]
		p := path + "[" + strconv.Itoa(i) + "]"
		if e.Kind != jsontree.Object {
			return nil, Errorf(CodeInvalidPublicKey, "%s must be an object, not %s", p, e.TypeName())
		}
		for _, m := range e.Members {
			if !contains([]string{"id", "type", "purposes", "publicKeyJwk"}, m.Name) {
				return nil, Errorf(CodeInvalidPublicKey, "%s: member %s is not allowed in a public key", p, jsontree.QuoteExcerpt(m.Name))
			}
		}
		jwk := e.Member("publicKeyJwk")
		if jwk == nil {
			return nil, Errorf(CodeInvalidPublicKey, "%s.publicKeyJwk is required", p)
		}
		if jwk.Kind != jsontree.Object {
			return nil, Errorf(CodeInvalidPublicKey, "%s.publicKeyJwk must be an object, not %s", p, jwk.TypeName())
		}
		for _, m := range jwk.Members {
			if isPrivateJWKMember(m.Name) {
				return nil, Errorf(CodeInvalidPublicKey, "%s.publicKeyJwk contains private key member %s", p, jsontree.QuoteExcerpt(m.Name))
			}
		}
		typ := e.Member("type")
		if typ == nil || typ.Kind != jsontree.String {
			return nil, Errorf(CodeInvalidPublicKey, "%s.type must be a string", p)
		}
		id, err := parseID(e.Member("id"), CodeInvalidPublicKey, p+".id")
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if k.ID == id {
				return nil, Errorf(CodeInvalidPublicKey, "%s.id %q is not unique", p, id)
			}
		}
		key := PublicKey{ID: id, Type: typ.Str, JWK: jwk.AppendCompact(nil)}
		if purposes := e.Member("purposes"); purposes != nil {
			if key.Purposes, err = parsePurposes(purposes, p+".purposes"); err != nil {
				return nil, err
			}
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// parsePurposes: an array (possibly empty, as the reference implementation allows) of distinct
// purpose names.
func parsePurposes(v *jsontree.Value, path string) ([]string, *Error) {
	if v.Kind != jsontree.Array {
		return nil, Errorf(CodeInvalidPublicKey, "%s must be an array, not %s", path, v.TypeName())
	}
	out := make([]string, 0, len(v.Elems))
	for i := range v.Elems {
		e := &v.Elems[i]
		if e.Kind != jsontree.String || !isPurpose(e.Str) {
			return nil, Errorf(CodeInvalidPublicKey, "%s[%d] must be one of authentication, assertionMethod, capabilityInvocation, capabilityDelegation, keyAgreement", path, i)
		}
		if contains(out, e.Str) {
			return nil, Errorf(CodeInvalidPublicKey, "%s has %q twice", path, e.Str)
		}
		out = append(out, e.Str)
	}
	return out, nil
}

// parseServices validates a services array (reference implementation validateServices).
func parseServices(v *jsontree.Value, path string) ([]Service, *Error) {
	if v == nil {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.Array {
		return nil, Errorf(CodeInvalidService, "%s must be an array, not %s", path, v.TypeName())
	}
	services := make([]Service, 0, len(v.Elems))
	for i := range v.Elems {
		e := &v.Elems[i]
		p := path + "[" + strconv.Itoa(i) + "]"
		if e.Kind != jsontree.Object {
			return nil, Errorf(CodeInvalidService, "%s must be an object, not %s", p, e.TypeName())
		}
		if err := exactMembers(e, []string{"id", "type", "serviceEndpoint"}, nil, CodeInvalidService, p); err != nil {
			return nil, err
		}
		id, err := parseID(e.Member("id"), CodeInvalidService, p+".id")
		if err != nil {
			return nil, err
		}
		for _, s := range services {
			if s.ID == id {
				return nil, Errorf(CodeInvalidService, "%s.id %q is not unique", p, id)
			}
		}
		typ := e.Member("type")
		if typ.Kind != jsontree.String {
			return nil, Errorf(CodeInvalidService, "%s.type must be a string", p)
		}
		// JavaScript's length counts UTF-16 code units.
		if len(utf16.Encode([]rune(typ.Str))) > maxServiceTypeLength {
			return nil, Errorf(CodeInvalidService, "%s.type must be at most %d characters", p, maxServiceTypeLength)
		}
		endpoint := e.Member("serviceEndpoint")
		switch endpoint.Kind {
		case jsontree.String:
			// The spec requires a URI with a scheme; the reference implementation's uri-js
			// accepts almost anything, so this is stricter than ION.
			u, perr := url.Parse(endpoint.Str)
			if perr != nil || u.Scheme == "" {
				return nil, Errorf(CodeInvalidService, "%s.serviceEndpoint must be a URI with a scheme", p)
			}
		case jsontree.Object:
		default:
			return nil, Errorf(CodeInvalidService, "%s.serviceEndpoint must be a URI string or an object, not %s", p, endpoint.TypeName())
		}
		services = append(services, Service{ID: id, Type: typ.Str, Endpoint: endpoint.AppendCompact(nil)})
	}
	return services, nil
}

// parseID: a string of at most 50 base64url characters.
func parseID(v *jsontree.Value, code Code, path string) (string, *Error) {
	if v == nil {
		return "", Errorf(code, "%s is required", path)
	}
	if v.Kind != jsontree.String {
		return "", Errorf(code, "%s must be a string, not %s", path, v.TypeName())
	}
	if len(v.Str) > maxIDLength {
		return "", Errorf(code, "%s must be at most %d characters", path, maxIDLength)
	}
	if !isBase64URL(v.Str) {
		return "", Errorf(code, "%s must use only base64url characters (A-Z a-z 0-9 - _)", path)
	}
	return v.Str, nil
}
