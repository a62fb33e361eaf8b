package httpsig

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// Names of the pseudo-headers and headers this package signs or reads.
const (
	headerSignature = "Signature"
	headerDate      = "Date"
	headerDigest    = "Digest"
	requestTarget   = "(request-target)"
	createdName     = "(created)"
	expiresName     = "(expires)"
)

// algorithmSign is the algorithm name Orb registers for its KMS-backed Ed25519 signer; Orb
// refuses any other name, "Ed25519" included, so it is the only name we send.
const algorithmSign = "Sign"

// acceptedAlgorithms are the algorithm parameters Verify takes, compared case-insensitively.
// Each may only name Ed25519 here, because the key type is what decides: "Sign" is Orb's,
// "ed25519" is the name in Orb's documentation and older releases, and "hs2019" is the
// draft's "derive it from the key". An absent parameter means the same as hs2019.
var acceptedAlgorithms = []string{algorithmSign, "ed25519", "hs2019"}

// signatureParams is a parsed Signature header.
type signatureParams struct {
	keyID     string
	algorithm string
	// headers are the signed header names, lower-cased, in signing order.
	headers   []string
	signature sigKey
	// created and expires keep the parameters' text: it is what the signing string holds.
	created string
	expires string
}

// parseSignatureHeader parses a draft-cavage Signature header value strictly: comma-separated
// name="value" parameters with optional spaces around the separators, letters-only names,
// quoted values without escapes or control characters, and bare decimal numbers for created
// and expires. Unknown parameters are ignored, as the draft requires; duplicates are refused.
func parseSignatureHeader(h string) (signatureParams, error) {
	var p signatureParams
	if len(h) > maxSignatureHeaderBytes {
		return p, fmt.Errorf("%w: longer than %d bytes", errMalformed, maxSignatureHeaderBytes)
	}
	seen := make(map[string]bool, 6)
	var sig, headers string
	var hasHeaders bool
	s := skipSpace(h)
	if s == "" {
		return p, fmt.Errorf("%w: empty", errMalformed)
	}
	for n := 0; ; n++ {
		if n == maxParams {
			return p, fmt.Errorf("%w: more than %d parameters", errMalformed, maxParams)
		}
		var name, value string
		var err error
		name, value, s, err = nextParam(s)
		if err != nil {
			return p, err
		}
		if seen[name] {
			return p, fmt.Errorf("%w: duplicate parameter %q", errMalformed, name)
		}
		seen[name] = true
		switch name {
		case "keyId":
			p.keyID = value
		case "algorithm":
			p.algorithm = value
		case "headers":
			headers, hasHeaders = value, true
		case "signature":
			sig = value
		case "created":
			p.created = value
		case "expires":
			p.expires = value
		}
		s = skipSpace(s)
		if s == "" {
			break
		}
		if s[0] != ',' {
			return p, fmt.Errorf("%w: expected ',' after parameter %q", errMalformed, name)
		}
		s = skipSpace(s[1:])
	}
	if p.keyID == "" {
		return p, fmt.Errorf("%w: no keyId", errMalformed)
	}
	if len(p.keyID) > maxKeyIDBytes {
		return p, fmt.Errorf("%w: keyId longer than %d bytes", errMalformed, maxKeyIDBytes)
	}
	if sig == "" {
		return p, fmt.Errorf("%w: no signature", errMalformed)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return p, fmt.Errorf("%w: signature is not %d bytes of base64", errMalformed, ed25519.SignatureSize)
	}
	p.signature = sigKey(raw)
	if !hasHeaders {
		// The draft's default; it lacks what Verify requires, so such a header is refused
		// later with a clear reason rather than here.
		headers = createdName
	}
	if p.headers, err = parseHeaderList(headers); err != nil {
		return p, err
	}
	return p, nil
}

// nextParam reads name OWS "=" OWS value from the start of s and returns the rest.
func nextParam(s string) (name, value, rest string, err error) {
	i := 0
	for i < len(s) && isAlpha(s[i]) {
		i++
	}
	if i == 0 {
		return "", "", "", fmt.Errorf("%w: expected a parameter name", errMalformed)
	}
	name, s = s[:i], skipSpace(s[i:])
	if s == "" || s[0] != '=' {
		return "", "", "", fmt.Errorf("%w: expected '=' after %q", errMalformed, name)
	}
	s = skipSpace(s[1:])
	if s == "" {
		return "", "", "", fmt.Errorf("%w: no value for %q", errMalformed, name)
	}
	if s[0] == '"' {
		end := 1
		for end < len(s) && s[end] != '"' {
			if !isQuotedChar(s[end]) {
				return "", "", "", fmt.Errorf("%w: forbidden character in %q", errMalformed, name)
			}
			end++
		}
		if end == len(s) {
			return "", "", "", fmt.Errorf("%w: unterminated value of %q", errMalformed, name)
		}
		value, rest = s[1:end], s[end+1:]
	} else {
		if name != "created" && name != "expires" {
			return "", "", "", fmt.Errorf("%w: value of %q is not quoted", errMalformed, name)
		}
		end := 0
		for end < len(s) && (isDigit(s[end]) || s[end] == '.') {
			end++
		}
		value, rest = s[:end], s[end:]
	}
	if (name == "created" || name == "expires") && !isUnixTime(value) {
		return "", "", "", fmt.Errorf("%w: %q is not a decimal number of seconds", errMalformed, name)
	}
	return name, value, rest, nil
}

// isUnixTime accepts what the draft allows for created and expires, integer seconds with an
// optional decimal fraction, up to 20 characters.
func isUnixTime(v string) bool {
	whole, frac, hasDot := strings.Cut(v, ".")
	if len(v) > 20 || whole == "" || (hasDot && frac == "") {
		return false
	}
	return strings.Trim(whole, "0123456789") == "" && strings.Trim(frac, "0123456789") == ""
}

// parseHeaderList splits the headers parameter. Names are compared and signed in lower case,
// since Orb lists "Date" and "Digest" capitalised but signs them lower-cased.
func parseHeaderList(v string) ([]string, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return nil, fmt.Errorf("%w: empty headers parameter", errMalformed)
	}
	if len(fields) > maxSignedHeaders {
		return nil, fmt.Errorf("%w: more than %d signed headers", errMalformed, maxSignedHeaders)
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		name := strings.ToLower(f)
		if !isHeaderName(name) {
			return nil, fmt.Errorf("%w: %q is not a header name", errMalformed, f)
		}
		for _, prev := range names[:i] {
			if prev == name {
				return nil, fmt.Errorf("%w: %q signed twice", errMalformed, f)
			}
		}
		names[i] = name
	}
	return names, nil
}

// formatSignatureHeader writes the header the way Orb writes it: keyId, algorithm, headers,
// signature, comma-separated without spaces. headers keeps the caller's casing.
func formatSignatureHeader(keyID, algorithm string, headers []string, sig []byte) string {
	return `keyId="` + keyID + `",algorithm="` + algorithm + `",headers="` + strings.Join(headers, " ") +
		`",signature="` + base64.StdEncoding.EncodeToString(sig) + `"`
}

// signingString builds the draft-cavage string: one "name: value" line per signed header,
// lower-cased names, joined by newlines without a trailing one. target is the request-target
// (path and query). A signed header must be present exactly once: a repeated one would be
// signed by Orb with its first value but by other implementations joined, so it is refused.
func signingString(r *http.Request, target string, p *signatureParams) (string, error) {
	var b strings.Builder
	for i, name := range p.headers {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(name)
		b.WriteString(": ")
		switch name {
		case requestTarget:
			b.WriteString(strings.ToLower(r.Method))
			b.WriteByte(' ')
			b.WriteString(target)
		case createdName:
			if p.created == "" {
				return "", fmt.Errorf("%w: (created) signed without a created parameter", errMalformed)
			}
			b.WriteString(p.created)
		case expiresName:
			if p.expires == "" {
				return "", fmt.Errorf("%w: (expires) signed without an expires parameter", errMalformed)
			}
			b.WriteString(p.expires)
		default:
			v, err := headerValue(r, name)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
		}
	}
	return b.String(), nil
}

// headerValue returns the single value of a signed header. Go moves Host out of the header
// map on the server side, so it is read from the request.
func headerValue(r *http.Request, name string) (string, error) {
	vs := r.Header.Values(name)
	if name == "host" && len(vs) == 0 && r.Host != "" {
		vs = []string{r.Host}
	}
	switch len(vs) {
	case 0:
		return "", fmt.Errorf("%w: %s", errMissingHeader, name)
	case 1:
		return strings.Trim(vs[0], " \t"), nil
	default:
		return "", fmt.Errorf("%w: %s appears %d times", errMalformed, name, len(vs))
	}
}

// requestTargetOf is the path and query the sender signed. On the server side it is the
// request line as received, which is what the sender's client wrote from the URL it signed, and
// which stays right even if a router has rewritten r.URL (http.StripPrefix does).
func requestTargetOf(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

func skipSpace(s string) string { return strings.TrimLeft(s, " \t") }

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isQuotedChar accepts visible ASCII and space, except '"' and '\': the draft defines no
// escapes, so a backslash could only be misread.
func isQuotedChar(c byte) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

// isHeaderName accepts an RFC 9110 token or one of the draft's parenthesised pseudo-headers.
func isHeaderName(s string) bool {
	if s == requestTarget || s == createdName || s == expiresName {
		return true
	}
	for i := range len(s) {
		c := s[i]
		if !(isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
