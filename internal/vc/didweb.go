package vc

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/mr-tron/base58"
)

// DID vocabulary.
const (
	// ContextDIDV1 is the DID core context a DID document starts with.
	ContextDIDV1 = "https://www.w3.org/ns/did/v1"
	// KeyTypeEd25519VerificationKey2020 is the verification method type of an Ed25519 key.
	KeyTypeEd25519VerificationKey2020 = "Ed25519VerificationKey2020"
	// WellKnownDIDPath is where a domain-level did:web document is served.
	WellKnownDIDPath = "/.well-known/did.json"

	didWebPrefix = "did:web:"
)

// ErrInvalidDID is wrapped by errors about malformed did:web DIDs and DID documents.
var ErrInvalidDID = errors.New("invalid DID")

// multicodecEd25519Pub is the multicodec prefix of an Ed25519 public key. Orb writes keys
// without it; other implementations write it, so reading accepts both.
var multicodecEd25519Pub = [2]byte{0xed, 0x01}

// DIDWeb returns the did:web DID of the site at endpoint, an http or https URL: the host, the
// port's colon percent-encoded as the did:web method requires ("did:web:127.0.0.1%3A8080"),
// then the path's segments separated by colons. Orb concatenates host and port unencoded,
// which only round-trips on the default ports.
func DIDWeb(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", fmt.Errorf("did:web from %q: %w: %w", endpoint, ErrInvalidDID, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", fmt.Errorf("did:web from %q: %w: scheme must be http or https", endpoint, ErrInvalidDID)
	}
	host := u.Hostname()
	if host == "" || strings.Contains(host, ":") {
		return "", fmt.Errorf("did:web from %q: %w: need a domain name or IPv4 host", endpoint, ErrInvalidDID)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("did:web from %q: %w: user info, query and fragment are not allowed", endpoint, ErrInvalidDID)
	}
	did := didWebPrefix + strings.ToLower(host)
	if port := u.Port(); port != "" {
		did += "%3A" + port
	}
	for seg := range strings.SplitSeq(strings.Trim(u.Path, "/"), "/") {
		if seg == "" {
			continue
		}
		did += ":" + strings.ReplaceAll(url.PathEscape(seg), ":", "%3A")
	}
	return did, nil
}

// ParseDIDWeb returns where the DID document of a did:web DID is served: host (with port) and
// path, /.well-known/did.json for a bare domain, /<segments>/did.json otherwise. A fragment
// (a verification method id) is ignored. The caller picks the scheme; the method says https.
func ParseDIDWeb(did string) (host, path string, err error) {
	did, _, _ = strings.Cut(did, "#")
	rest, ok := strings.CutPrefix(did, didWebPrefix)
	if !ok || rest == "" {
		return "", "", fmt.Errorf("parse %q: %w: not a did:web DID", did, ErrInvalidDID)
	}
	parts := strings.Split(rest, ":")
	host, err = url.PathUnescape(parts[0])
	if err != nil {
		return "", "", fmt.Errorf("parse %q: %w: %w", did, ErrInvalidDID, err)
	}
	h, port, splitErr := net.SplitHostPort(host)
	if splitErr != nil {
		h, port = host, ""
	}
	if h == "" || strings.ContainsAny(h, "/?#@[]: ") || (splitErr == nil && port == "") {
		return "", "", fmt.Errorf("parse %q: %w: bad host %q", did, ErrInvalidDID, host)
	}
	if len(parts) == 1 {
		return host, WellKnownDIDPath, nil
	}
	var b strings.Builder
	for _, seg := range parts[1:] {
		s, err := url.PathUnescape(seg)
		if err != nil || s == "" || s == "." || s == ".." || strings.Contains(s, "/") {
			return "", "", fmt.Errorf("parse %q: %w: bad path segment %q", did, ErrInvalidDID, seg)
		}
		b.WriteString("/" + s)
	}
	return host, b.String() + "/did.json", nil
}

// KeyID returns a stable key id for pub, base64url(sha256(pub)) without padding, the same shape
// as the key ids in Orb's verification methods.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// EncodePublicKeyMultibase returns "z" + base58btc of the raw 32 key bytes, with no multicodec
// prefix, as Orb publishes its keys.
func EncodePublicKeyMultibase(pub ed25519.PublicKey) string {
	return "z" + base58.Encode(pub)
}

// DecodePublicKeyMultibase reads a base58btc multibase Ed25519 key, raw or with the 0xed01
// multicodec prefix.
func DecodePublicKeyMultibase(s string) (ed25519.PublicKey, error) {
	if len(s) < 2 || s[0] != 'z' || len(s) > 64 {
		return nil, fmt.Errorf("decode public key: %w: not multibase base58btc", ErrInvalidDID)
	}
	b, err := base58.Decode(s[1:])
	if err != nil {
		return nil, fmt.Errorf("decode public key: %w: %w", ErrInvalidDID, err)
	}
	switch {
	case len(b) == ed25519.PublicKeySize:
		return ed25519.PublicKey(b), nil
	case len(b) == ed25519.PublicKeySize+2 && [2]byte(b[:2]) == multicodecEd25519Pub:
		return ed25519.PublicKey(b[2:]), nil
	default:
		return nil, fmt.Errorf("decode public key: %w: %d bytes is not an Ed25519 key", ErrInvalidDID, len(b))
	}
}

// DIDDocument is the part of a DID document needed to publish and resolve Ed25519 assertion
// keys.
type DIDDocument struct {
	Context              ContextList          `json:"@context"`
	ID                   string               `json:"id"`
	VerificationMethod   []VerificationMethod `json:"verificationMethod"`
	Authentication       []MethodReference    `json:"authentication,omitempty"`
	AssertionMethod      []MethodReference    `json:"assertionMethod,omitempty"`
	CapabilityDelegation []MethodReference    `json:"capabilityDelegation,omitempty"`
	CapabilityInvocation []MethodReference    `json:"capabilityInvocation,omitempty"`
}

// ContextList is a JSON-LD @context read as its URLs: a single string or an array, whose inline
// context objects are skipped.
type ContextList []string

// UnmarshalJSON accepts a string or an array of strings and objects.
func (l *ContextList) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*l = ContextList{s}
		return nil
	}
	var list []any
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("@context: %w: want a string or an array", ErrInvalidDID)
	}
	out := make(ContextList, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	*l = out
	return nil
}

// VerificationMethod is one key in a DID document.
type VerificationMethod struct {
	ID                 string `json:"id"`
	Type               string `json:"type"`
	Controller         string `json:"controller"`
	PublicKeyMultibase string `json:"publicKeyMultibase,omitempty"`
}

// MethodReference is an entry of a verification relationship: a method id, or an embedded
// method, which this package reduces to its id.
type MethodReference string

// UnmarshalJSON accepts a string or an object with an id.
func (r *MethodReference) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*r = MethodReference(s)
		return nil
	}
	var m struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
		return fmt.Errorf("verification relationship entry: %w: want a string or an object with an id", ErrInvalidDID)
	}
	*r = MethodReference(m.ID)
	return nil
}

// NewDIDDocument returns the DID document a domain serves for did, with one
// Ed25519VerificationKey2020 per key, ids did#KeyID(key), each listed in every verification
// relationship, as Orb lists its keys.
func NewDIDDocument(did string, keys ...ed25519.PublicKey) (*DIDDocument, error) {
	if _, _, err := ParseDIDWeb(did); err != nil {
		return nil, fmt.Errorf("new DID document: %w", err)
	}
	if strings.Contains(did, "#") {
		return nil, fmt.Errorf("new DID document: %w: %q has a fragment", ErrInvalidDID, did)
	}
	doc := &DIDDocument{Context: ContextList{ContextDIDV1, ContextEd25519Signature2020}, ID: did}
	for _, k := range keys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("new DID document: key is %d bytes", len(k))
		}
		id := did + "#" + KeyID(k)
		doc.VerificationMethod = append(doc.VerificationMethod, VerificationMethod{
			ID: id, Type: KeyTypeEd25519VerificationKey2020, Controller: did,
			PublicKeyMultibase: EncodePublicKeyMultibase(k),
		})
		ref := MethodReference(id)
		doc.Authentication = append(doc.Authentication, ref)
		doc.AssertionMethod = append(doc.AssertionMethod, ref)
		doc.CapabilityDelegation = append(doc.CapabilityDelegation, ref)
		doc.CapabilityInvocation = append(doc.CapabilityInvocation, ref)
	}
	return doc, nil
}

// ParseDIDDocument decodes a DID document of at most MaxDocumentSize bytes.
func ParseDIDDocument(data []byte) (*DIDDocument, error) {
	if len(data) > MaxDocumentSize {
		return nil, fmt.Errorf("parse DID document: %w: %d bytes", ErrInvalidDID, len(data))
	}
	if err := checkDepth(data); err != nil {
		return nil, fmt.Errorf("parse DID document: %w: %w", ErrInvalidDID, err)
	}
	var doc DIDDocument
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse DID document: %w: %w", ErrInvalidDID, err)
	}
	if doc.ID == "" {
		return nil, fmt.Errorf("parse DID document: %w: id missing", ErrInvalidDID)
	}
	return &doc, nil
}

// AssertionKey returns the Ed25519 key of verification method vm ("did#frag", or "#frag"
// relative to the document), which must belong to this document and be listed under
// assertionMethod.
func (d *DIDDocument) AssertionKey(vm string) (ed25519.PublicKey, error) {
	if strings.HasPrefix(vm, "#") {
		vm = d.ID + vm
	}
	if did, _, _ := strings.Cut(vm, "#"); did != d.ID {
		return nil, fmt.Errorf("assertion key %s: %w: not a method of %s", vm, ErrInvalidDID, d.ID)
	}
	asserting := false
	for _, r := range d.AssertionMethod {
		ref := string(r)
		if strings.HasPrefix(ref, "#") {
			ref = d.ID + ref
		}
		asserting = asserting || ref == vm
	}
	if !asserting {
		return nil, fmt.Errorf("assertion key %s: %w: not listed under assertionMethod", vm, ErrInvalidDID)
	}
	for _, m := range d.VerificationMethod {
		id := m.ID
		if strings.HasPrefix(id, "#") {
			id = d.ID + id
		}
		if id != vm {
			continue
		}
		if m.Type != KeyTypeEd25519VerificationKey2020 {
			return nil, fmt.Errorf("assertion key %s: %w: type %q", vm, ErrInvalidDID, m.Type)
		}
		pub, err := DecodePublicKeyMultibase(m.PublicKeyMultibase)
		if err != nil {
			return nil, fmt.Errorf("assertion key %s: %w", vm, err)
		}
		return pub, nil
	}
	return nil, fmt.Errorf("assertion key %s: %w: no such verification method", vm, ErrInvalidDID)
}

// DocumentResolver returns a ResolveKeyFunc that resolves verification methods against the
// given DID documents only, for keys already fetched or configured.
func DocumentResolver(docs ...*DIDDocument) ResolveKeyFunc {
	byID := make(map[string]*DIDDocument, len(docs))
	for _, d := range docs {
		byID[d.ID] = d
	}
	return func(_ context.Context, vm string) (ed25519.PublicKey, error) {
		did, _, _ := strings.Cut(vm, "#")
		d, ok := byID[did]
		if !ok {
			return nil, fmt.Errorf("resolve %s: %w: unknown DID", vm, ErrInvalidDID)
		}
		return d.AssertionKey(vm)
	}
}
