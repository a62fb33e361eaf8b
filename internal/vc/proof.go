package vc

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/mr-tron/base58"
)

// Proof vocabulary.
const (
	// ProofTypeEd25519Signature2020 is the only proof type this package signs and verifies.
	ProofTypeEd25519Signature2020 = "Ed25519Signature2020"
	// ProofPurposeAssertionMethod is the purpose of every anchor credential proof.
	ProofPurposeAssertionMethod = "assertionMethod"
)

var (
	// ErrInvalidProof is wrapped when a proof is malformed or its signature does not verify.
	ErrInvalidProof = errors.New("invalid proof")
	// ErrUnsupportedProof is wrapped when a proof is well formed but of a type or purpose this
	// package does not verify.
	ErrUnsupportedProof = errors.New("unsupported proof")
)

// Proof is a Linked Data proof as it appears in a credential's proof member or in the
// attachment of a witness's AnchorReceipt. Created is kept as the exact text received because
// that text, not the instant, is what the signature covers.
type Proof struct {
	Type               string `json:"type"`
	Created            string `json:"created"`
	Creator            string `json:"creator,omitempty"`
	VerificationMethod string `json:"verificationMethod,omitempty"`
	ProofPurpose       string `json:"proofPurpose,omitempty"`
	Domain             string `json:"domain,omitempty"`
	Challenge          string `json:"challenge,omitempty"`
	ProofValue         string `json:"proofValue,omitempty"`
	JWS                string `json:"jws,omitempty"`
}

// proofStringFields are the members Proof carries; any other member of a proof object is
// ignored when verifying, as Orb ignores it.
var proofStringFields = [...]string{
	"type", "created", "creator", "verificationMethod", "proofPurpose", "domain", "challenge",
	"proofValue", "jws",
}

// proofFromMap reads a proof object. The members Proof carries must be strings; type and an
// RFC 3339 created are required.
func proofFromMap(m map[string]any) (Proof, error) {
	vals := make(map[string]string, len(proofStringFields))
	for _, k := range proofStringFields {
		v, ok := m[k]
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return Proof{}, fmt.Errorf("%w: %s must be a string", ErrInvalidProof, k)
		}
		vals[k] = s
	}
	p := Proof{
		Type: vals["type"], Created: vals["created"], Creator: vals["creator"],
		VerificationMethod: vals["verificationMethod"], ProofPurpose: vals["proofPurpose"],
		Domain: vals["domain"], Challenge: vals["challenge"], ProofValue: vals["proofValue"],
		JWS: vals["jws"],
	}
	if p.Type == "" {
		return Proof{}, fmt.Errorf("%w: type missing", ErrInvalidProof)
	}
	if _, err := p.CreatedTime(); err != nil {
		return Proof{}, err
	}
	return p, nil
}

// CreatedTime parses Created.
func (p Proof) CreatedTime() (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, p.Created)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: created: %w", ErrInvalidProof, err)
	}
	return t, nil
}

// object returns the proof as a JSON object holding only its non-empty members.
func (p Proof) object() map[string]any {
	m := make(map[string]any, len(proofStringFields))
	for k, v := range map[string]string{
		"type": p.Type, "created": p.Created, "creator": p.Creator,
		"verificationMethod": p.VerificationMethod, "proofPurpose": p.ProofPurpose,
		"domain": p.Domain, "challenge": p.Challenge, "proofValue": p.ProofValue, "jws": p.JWS,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// ProofOptions are the signer's choices for one proof.
type ProofOptions struct {
	// VerificationMethod names the key, e.g. "did:web:example.com#<key id>". Required.
	VerificationMethod string
	// Domain is the proof's optional domain; Orb puts its own base URL there, or its
	// verifiable-credential log's URL when a log timestamps the proof.
	Domain string
	// Created is the signing time; zero means now.
	Created time.Time
}

// ResolveKeyFunc returns the Ed25519 public key that a proof's verificationMethod names, and
// must fail if that key may not make assertions for its controller.
type ResolveKeyFunc func(ctx context.Context, verificationMethod string) (ed25519.PublicKey, error)

// CreateProof signs c as Orb's Ed25519Signature2020 suite does and returns the proof without
// adding it, which is what a witness sends back. The signature covers the credential without
// its proofs and with the suite context appended if missing; the credential must be strict
// (see CheckStrict) once that context is there, because Orb rejects any other.
func CreateProof(c *Credential, key ed25519.PrivateKey, opts ProofOptions) (Proof, error) {
	if len(key) != ed25519.PrivateKeySize {
		return Proof{}, fmt.Errorf("create proof: private key is %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	if opts.VerificationMethod == "" {
		return Proof{}, errors.New("create proof: verification method missing")
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	p := Proof{
		Type:               ProofTypeEd25519Signature2020,
		Created:            created.UTC().Format(time.RFC3339Nano),
		VerificationMethod: opts.VerificationMethod,
		ProofPurpose:       ProofPurposeAssertionMethod,
		Domain:             opts.Domain,
	}
	unproofed := &Credential{obj: c.withSuiteContext()}
	if err := unproofed.CheckStrict(); err != nil {
		return Proof{}, fmt.Errorf("create proof: %w", err)
	}
	data, err := signingInput(c, p)
	if err != nil {
		return Proof{}, fmt.Errorf("create proof: %w", err)
	}
	p.ProofValue = "z" + base58.Encode(ed25519.Sign(key, data))
	return p, nil
}

// Sign returns a copy of c with the suite context ensured and a new proof appended after any
// existing ones; c itself is unchanged.
func Sign(c *Credential, key ed25519.PrivateKey, opts ProofOptions) (*Credential, error) {
	p, err := CreateProof(c, key, opts)
	if err != nil {
		return nil, fmt.Errorf("sign credential: %w", err)
	}
	out, err := AddProof(c, p)
	if err != nil {
		return nil, fmt.Errorf("sign credential: %w", err)
	}
	return out, nil
}

// AddProof returns a copy of c with p appended to its proofs and the suite context ensured, the
// way an origin collects its witnesses' proofs. It checks p's shape, not its signature: call
// VerifyProof first.
func AddProof(c *Credential, p Proof) (*Credential, error) {
	if _, err := proofFromMap(p.object()); err != nil {
		return nil, fmt.Errorf("add proof: %w", err)
	}
	existing := c.Proofs()
	if len(existing) >= MaxProofs {
		return nil, fmt.Errorf("add proof: credential already has %d proofs", len(existing))
	}
	obj := c.withSuiteContext()
	proofs := make([]any, 0, len(existing)+1)
	switch t := c.obj["proof"].(type) {
	case map[string]any:
		proofs = append(proofs, t)
	case []any:
		proofs = append(proofs, t...)
	}
	obj["proof"] = append(proofs, p.object())
	return &Credential{obj: obj}, nil
}

// VerifyProof checks one Ed25519Signature2020 proof on c, independently of any other proof c
// carries. resolve maps the proof's verificationMethod to its key. Errors wrap ErrInvalidProof
// for a bad signature or malformed proof, ErrUnsupportedProof for another type or purpose, and
// ErrUndefinedTerm when c has data its contexts do not define (data no proof covers).
func VerifyProof(ctx context.Context, c *Credential, p Proof, resolve ResolveKeyFunc) error {
	if p.Type != ProofTypeEd25519Signature2020 {
		return fmt.Errorf("verify proof: %w: type %q", ErrUnsupportedProof, p.Type)
	}
	if p.ProofPurpose != ProofPurposeAssertionMethod {
		return fmt.Errorf("verify proof: %w: purpose %q", ErrUnsupportedProof, p.ProofPurpose)
	}
	if p.VerificationMethod == "" {
		return fmt.Errorf("verify proof: %w: verificationMethod missing", ErrInvalidProof)
	}
	if _, err := p.CreatedTime(); err != nil {
		return fmt.Errorf("verify proof: %w", err)
	}
	sig, err := decodeProofValue(p.ProofValue)
	if err != nil {
		return fmt.Errorf("verify proof: %w", err)
	}
	pub, err := resolve(ctx, p.VerificationMethod)
	if err != nil {
		return fmt.Errorf("verify proof: resolve %s: %w", p.VerificationMethod, err)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("verify proof: resolve %s: key is %d bytes", p.VerificationMethod, len(pub))
	}
	data, err := signingInput(c, p)
	if err != nil {
		return fmt.Errorf("verify proof: %w", err)
	}
	if !ed25519.Verify(pub, data, sig) {
		return fmt.Errorf("verify proof: %w: signature does not match", ErrInvalidProof)
	}
	return nil
}

// decodeProofValue reads a multibase base58btc ("z…") Ed25519 signature.
func decodeProofValue(s string) ([]byte, error) {
	if len(s) < 2 || s[0] != 'z' || len(s) > 2*ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: proofValue is not multibase base58btc", ErrInvalidProof)
	}
	sig, err := base58.Decode(s[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: proofValue: %w", ErrInvalidProof, err)
	}
	if len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: proofValue holds %d bytes, want %d", ErrInvalidProof, len(sig), ed25519.SignatureSize)
	}
	return sig, nil
}

// signingInput is the data an Ed25519Signature2020 signature covers, as Orb computes it:
// sha256 of the canonical proof options (the proof without proofValue and jws, under the
// document's @context) followed by sha256 of the canonical document without proofs.
func signingInput(c *Credential, p Proof) ([]byte, error) {
	docDigest, err := c.documentDigest()
	if err != nil {
		return nil, fmt.Errorf("canonicalize document: %w", err)
	}
	options := p.object()
	delete(options, "proofValue")
	delete(options, "jws")
	doc, err := processable(c.withSuiteContext()["@context"])
	if err != nil {
		return nil, fmt.Errorf("canonicalize proof options: %w", err)
	}
	options["@context"] = doc
	canon, err := canonicalize(options)
	if err != nil {
		return nil, fmt.Errorf("canonicalize proof options: %w", err)
	}
	optionsDigest := sha256.Sum256(canon)
	return append(optionsDigest[:], docDigest[:]...), nil
}

// ProofAttachment is the object a witness puts in its AnchorReceipt's attachment: the proof
// under the contexts that define its terms.
type ProofAttachment struct {
	Context []string `json:"@context"`
	Proof   Proof    `json:"proof"`
}

// NewProofAttachment wraps p the way Orb's witness does.
func NewProofAttachment(p Proof) ProofAttachment {
	return ProofAttachment{Context: []string{ContextSecurityV1, ContextEd25519Signature2020}, Proof: p}
}

// ParseProofAttachment reads a witness's proof from an AnchorReceipt attachment, at most
// MaxDocumentSize bytes.
func ParseProofAttachment(data []byte) (Proof, error) {
	if len(data) > MaxDocumentSize {
		return Proof{}, fmt.Errorf("parse proof attachment: %w: %d bytes", ErrInvalidProof, len(data))
	}
	obj, err := decodeObject(data)
	if err != nil {
		return Proof{}, fmt.Errorf("parse proof attachment: %w: %w", ErrInvalidProof, err)
	}
	m, ok := obj["proof"].(map[string]any)
	if !ok {
		return Proof{}, fmt.Errorf("parse proof attachment: %w: proof must be an object", ErrInvalidProof)
	}
	p, err := proofFromMap(m)
	if err != nil {
		return Proof{}, fmt.Errorf("parse proof attachment: %w", err)
	}
	return p, nil
}
