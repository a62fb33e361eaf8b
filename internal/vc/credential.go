package vc

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/gowebpki/jcs"
)

// Size limits applied to every document this package reads.
const (
	// MaxDocumentSize bounds a credential or DID document in bytes. An anchor credential with
	// a dozen proofs is about 4 KiB.
	MaxDocumentSize = 256 << 10
	// MaxProofs bounds the proofs on one credential: the origin's plus one per witness.
	MaxProofs = 64
	// maxDepth bounds JSON nesting; JSON-LD processing recurses once per level.
	maxDepth = 32
)

// ErrInvalidCredential is wrapped by every ParseCredential and NewAnchorCredential error.
var ErrInvalidCredential = errors.New("invalid credential")

// Credential is a parsed verifiable credential. It keeps the decoded JSON as received (numbers
// as json.Number), so marshalling it back loses nothing that the proofs cover. It is immutable:
// operations that change it return a new Credential, so one value may be shared between
// goroutines.
type Credential struct {
	obj map[string]any

	// digest caches sha256 of the canonical form of the document without proofs, which every
	// proof on the credential signs.
	digestOnce sync.Once
	digest     [sha256.Size]byte
	digestErr  error
}

// ParseCredential decodes and checks a credential: a JSON object at most MaxDocumentSize bytes
// and maxDepth levels deep whose @context starts with the credentials context, with a type list
// holding VerifiableCredential, an issuer, an RFC 3339 issuanceDate, a credentialSubject and at
// most MaxProofs well-formed proofs. It does not run JSON-LD processing; Sign and VerifyProof
// do.
func ParseCredential(data []byte) (*Credential, error) {
	if len(data) > MaxDocumentSize {
		return nil, fmt.Errorf("parse credential: %w: %d bytes exceeds %d", ErrInvalidCredential, len(data), MaxDocumentSize)
	}
	obj, err := decodeObject(data)
	if err != nil {
		return nil, fmt.Errorf("parse credential: %w: %w", ErrInvalidCredential, err)
	}
	c := &Credential{obj: obj}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("parse credential: %w: %w", ErrInvalidCredential, err)
	}
	return c, nil
}

// decodeObject decodes one JSON object with json.Number numbers and bounded nesting.
func decodeObject(data []byte) (map[string]any, error) {
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("decode JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("decode JSON object: null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode JSON object: trailing data")
	}
	return obj, nil
}

// checkDepth rejects JSON nested deeper than maxDepth before it is decoded. Brackets inside
// strings are skipped; malformed input is left for the decoder to report.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("JSON nested deeper than %d levels", maxDepth)
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return nil
}

func (c *Credential) validate() error {
	ctxs, err := contextList(c.obj["@context"])
	if err != nil {
		return err
	}
	if first, _ := ctxs[0].(string); first != ContextCredentialsV1 {
		return fmt.Errorf("@context must start with %s", ContextCredentialsV1)
	}
	types, err := stringList(c.obj["type"])
	if err != nil || !slices.Contains(types, "VerifiableCredential") {
		return errors.New("type must list VerifiableCredential")
	}
	if c.Issuer() == "" {
		return errors.New("issuer missing")
	}
	date, _ := c.obj["issuanceDate"].(string)
	if _, err := time.Parse(time.RFC3339Nano, date); err != nil {
		return fmt.Errorf("issuanceDate: %w", err)
	}
	switch c.obj["credentialSubject"].(type) {
	case map[string]any, []any:
	default:
		return errors.New("credentialSubject must be an object or array")
	}
	if id, ok := c.obj["id"]; ok {
		if s, ok := id.(string); !ok || s == "" {
			return errors.New("id must be a non-empty string")
		}
	}
	_, err = c.proofs()
	return err
}

// contextList returns @context as a non-empty list of strings and objects.
func contextList(v any) ([]any, error) {
	var list []any
	switch t := v.(type) {
	case string:
		list = []any{t}
	case []any:
		list = t
	default:
		return nil, errors.New("@context must be a string or an array")
	}
	if len(list) == 0 {
		return nil, errors.New("@context is empty")
	}
	for _, e := range list {
		switch e.(type) {
		case string, map[string]any:
		default:
			return nil, errors.New("@context entries must be strings or objects")
		}
	}
	return list, nil
}

// stringList accepts a string or an array of strings.
func stringList(v any) ([]string, error) {
	switch t := v.(type) {
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, errors.New("expected an array of strings")
			}
			out = append(out, s)
		}
		return out, nil
	default:
		return nil, errors.New("expected a string or an array of strings")
	}
}

// MarshalJSON encodes the credential in RFC 8785 canonical JSON (sorted keys, minimal
// escaping), the form Orb puts in a replies data URI, so equal credentials give equal bytes.
func (c *Credential) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c.obj); err != nil {
		return nil, fmt.Errorf("marshal credential: %w", err)
	}
	out, err := jcs.Transform(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("marshal credential: %w", err)
	}
	return out, nil
}

// ID returns the credential's id, or "" when it has none.
func (c *Credential) ID() string {
	s, _ := c.obj["id"].(string)
	return s
}

// Issuer returns the issuer's identifier, whether issuer is a string or an object with an id.
func (c *Credential) Issuer() string {
	switch t := c.obj["issuer"].(type) {
	case string:
		return t
	case map[string]any:
		s, _ := t["id"].(string)
		return s
	default:
		return ""
	}
}

// IssuanceDate returns issuanceDate, which ParseCredential checked.
func (c *Credential) IssuanceDate() time.Time {
	s, _ := c.obj["issuanceDate"].(string)
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// Contexts returns the @context URLs, in order; inline context objects are skipped.
func (c *Credential) Contexts() []string {
	list, _ := contextList(c.obj["@context"])
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Proofs returns the credential's proofs in order; ParseCredential checked their shape.
func (c *Credential) Proofs() []Proof {
	p, _ := c.proofs()
	return p
}

func (c *Credential) proofs() ([]Proof, error) {
	var entries []any
	switch t := c.obj["proof"].(type) {
	case nil:
		if _, present := c.obj["proof"]; present {
			return nil, errors.New("proof must be an object or an array")
		}
		return nil, nil
	case map[string]any:
		entries = []any{t}
	case []any:
		entries = t
	default:
		return nil, errors.New("proof must be an object or an array")
	}
	if len(entries) > MaxProofs {
		return nil, fmt.Errorf("%d proofs exceeds %d", len(entries), MaxProofs)
	}
	out := make([]Proof, 0, len(entries))
	for i, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("proof %d is not an object", i)
		}
		p, err := proofFromMap(m)
		if err != nil {
			return nil, fmt.Errorf("proof %d: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// WithoutProofs returns a copy of the credential with no proof member, the form an origin
// offers to its witnesses.
func (c *Credential) WithoutProofs() *Credential {
	obj := make(map[string]any, len(c.obj))
	for k, v := range c.obj {
		if k != "proof" {
			obj[k] = v
		}
	}
	return &Credential{obj: obj}
}

// withSuiteContext returns the document without its proofs and with the Ed25519Signature2020
// context appended unless already present: Orb appends it before signing, whatever the offered
// credential carried, so every Ed25519Signature2020 proof covers a document that has it.
func (c *Credential) withSuiteContext() map[string]any {
	obj := make(map[string]any, len(c.obj))
	for k, v := range c.obj {
		if k != "proof" {
			obj[k] = v
		}
	}
	list, _ := contextList(c.obj["@context"])
	for _, e := range list {
		if e == ContextEd25519Signature2020 {
			return obj
		}
	}
	obj["@context"] = append(slices.Clone(list), ContextEd25519Signature2020)
	return obj
}

// documentDigest returns sha256 of the canonical form of the document that proofs sign.
func (c *Credential) documentDigest() ([sha256.Size]byte, error) {
	c.digestOnce.Do(func() {
		doc, err := processable(c.withSuiteContext())
		if err != nil {
			c.digestErr = err
			return
		}
		canon, err := canonicalize(doc.(map[string]any))
		if err != nil {
			c.digestErr = err
			return
		}
		c.digest = sha256.Sum256(canon)
	})
	return c.digest, c.digestErr
}

// CheckStrict fails with ErrUndefinedTerm if the credential, proofs included, is not what Orb
// accepts when it parses strictly: every member must be defined by the credential's own
// contexts, so that compacting the JSON-LD leaves it unchanged. Orb silently drops an Offer
// whose credential fails this, so an origin checks before offering.
func (c *Credential) CheckStrict() error {
	doc, err := processable(c.obj)
	if err != nil {
		return fmt.Errorf("check credential: %w", err)
	}
	if err := checkCompaction(doc.(map[string]any)); err != nil {
		return fmt.Errorf("check credential: %w", err)
	}
	return nil
}
