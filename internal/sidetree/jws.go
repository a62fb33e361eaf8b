package sidetree

import (
	"strings"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// compactJWS is a parsed signedData value: RFC 7515 compact serialisation with the reference
// implementation's restrictions. The received string is kept verbatim: it is what batch files
// carry and what the signature covers, and it is never re-serialised.
type compactJWS struct {
	raw          string
	alg          Algorithm
	signingInput string // BASE64URL(header) "." BASE64URL(payload)
	payload      jsontree.Value
	signature    []byte
}

// parseCompactJWS applies, in the reference implementation's order: a string of exactly three
// '.'-separated parts; a protected header that decodes to a JSON object with exactly one member,
// "alg", naming an algorithm the profile enables; base64url signature and payload; and, beyond
// the reference implementation (which fails later, at JSON.parse), a payload that is a JSON
// object.
func parseCompactJWS(v *jsontree.Value, p Profile, path string) (*compactJWS, *Error) {
	if v == nil {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.String {
		return nil, Errorf(CodeInvalidJWS, "%s must be a compact JWS string, not %s", path, v.TypeName())
	}
	return parseCompactJWSString(v.Str, p, path)
}

func parseCompactJWSString(s string, p Profile, path string) (*compactJWS, *Error) {
	first := strings.IndexByte(s, '.')
	last := strings.LastIndexByte(s, '.')
	if first < 0 || first == last || strings.IndexByte(s[first+1:last], '.') >= 0 {
		return nil, Errorf(CodeInvalidJWS, "%s must have exactly three '.'-separated parts", path)
	}
	headerPart, payloadPart, sigPart := s[:first], s[first+1:last], s[last+1:]

	headerJSON, err := decodeBase64URL(headerPart)
	if err != nil {
		return nil, Wrap(CodeInvalidJWS, err, "%s protected header", path)
	}
	header, err := jsontree.Parse(headerJSON)
	if err != nil {
		return nil, Wrap(CodeInvalidJWSHeader, err, "%s protected header", path)
	}
	algValue, herr := headerAlg(&header, p, path)
	if herr != nil {
		return nil, herr
	}
	alg := Algorithm(algValue.Str)
	if alg != ES256K && alg != EdDSA && (alg != ES256 || !p.Orb) || !p.allows(alg) {
		return nil, Errorf(CodeUnsupportedAlgorithm, "%s: alg %s is not accepted (profile algorithms: %s)", path, jsontree.QuoteExcerpt(algValue.Str), p.algorithmList())
	}
	sig, err := decodeBase64URL(sigPart)
	if err != nil {
		return nil, Wrap(CodeInvalidJWS, err, "%s signature", path)
	}
	payloadJSON, err := decodeBase64URL(payloadPart)
	if err != nil {
		return nil, Wrap(CodeInvalidJWS, err, "%s payload", path)
	}
	payload, err := jsontree.Parse(payloadJSON)
	if err != nil {
		return nil, Wrap(CodeInvalidSignedData, err, "%s payload", path)
	}
	if payload.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidSignedData, "%s payload must be a JSON object, not %s", path, payload.TypeName())
	}
	return &compactJWS{raw: s, alg: alg, signingInput: s[:last], payload: payload, signature: sig}, nil
}

// headerAlg checks a protected header's members and returns its alg. The reference
// implementation allows exactly {"alg"}; Orb's rules (sidetree-go's validateProtectedHeaders)
// allow a kid beside it, which Orb's clients send.
func headerAlg(header *jsontree.Value, p Profile, path string) (*jsontree.Value, *Error) {
	if header.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidJWSHeader, "%s protected header must be a JSON object", path)
	}
	if !p.Orb {
		if len(header.Members) != 1 || header.Members[0].Name != "alg" {
			return nil, Errorf(CodeInvalidJWSHeader, "%s protected header must be exactly {\"alg\": ...}", path)
		}
	} else {
		for _, m := range header.Members {
			if m.Name != "alg" && m.Name != "kid" {
				return nil, Errorf(CodeInvalidJWSHeader, "%s: invalid protected header: %s", path, jsontree.QuoteExcerpt(m.Name))
			}
		}
		if kid := header.Member("kid"); kid != nil && kid.Kind != jsontree.String {
			return nil, Errorf(CodeInvalidJWSHeader, "%s protected header kid must be a string", path)
		}
	}
	alg := header.Member("alg")
	if alg == nil {
		return nil, Errorf(CodeInvalidJWSHeader, "%s: algorithm must be present in the protected header", path)
	}
	if alg.Kind != jsontree.String {
		return nil, Errorf(CodeInvalidJWSHeader, "%s protected header alg must be a string", path)
	}
	return alg, nil
}

// exactMembers checks that obj has exactly the named members, and perhaps some of the optional
// ones, reporting the first unknown one or the first missing one. path names obj in messages.
func exactMembers(obj *jsontree.Value, names, optional []string, code Code, path string) *Error {
	for _, m := range obj.Members {
		if !contains(names, m.Name) && !contains(optional, m.Name) {
			return Errorf(code, "%s: member %s is not allowed (expected exactly %s)", path, jsontree.QuoteExcerpt(m.Name), strings.Join(names, ", "))
		}
	}
	for _, n := range names {
		if obj.Member(n) == nil {
			return Errorf(code, "%s: member %q is missing (expected exactly %s)", path, n, strings.Join(names, ", "))
		}
	}
	return nil
}
