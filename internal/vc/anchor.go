package vc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Anchor credential vocabulary, as Orb writes it.
const (
	// AnchorProfileDefault is the profile of Orb's did:orb anchors, used when AnchorParams
	// leaves Profile empty.
	AnchorProfileDefault = "https://w3id.org/orb#v0"

	typeVerifiableCredential = "VerifiableCredential"
	typeAnchorCredential     = "AnchorCredential"
	typeAnchorLink           = "AnchorLink"
	relLinkset               = "linkset"
	hashlinkPrefix           = "hl:"
)

// AnchorParams describes one anchor credential.
type AnchorParams struct {
	// ID is the credential's URL, unique per anchor (Orb uses <base>/vc/<uuid>).
	ID string
	// Issuer is the anchoring domain's identifier: its did:web DID or service IRI.
	Issuer string
	// Issued is the issuance time; it is written in UTC with nanoseconds, as Orb writes it.
	Issued time.Time
	// HRef is the hashlink of the anchor linkset's original content, the linkset's anchor.
	HRef string
	// Anchor is the hashlink of the batch's core index file, without hashlink metadata.
	Anchor string
	// Profile defaults to AnchorProfileDefault.
	Profile string
}

// AnchorSubject is the credentialSubject of an anchor credential.
type AnchorSubject struct {
	HRef    string
	Anchor  string
	Profile string
}

// NewAnchorCredential builds an unproofed anchor credential in the shape Orb issues:
// contexts credentials/v1, activityanchors/v1 and the Ed25519Signature2020 suite, types
// VerifiableCredential and AnchorCredential, and an AnchorLink subject with rel "linkset".
func NewAnchorCredential(p AnchorParams) (*Credential, error) {
	profile := p.Profile
	if profile == "" {
		profile = AnchorProfileDefault
	}
	var errs []error
	if p.ID == "" {
		errs = append(errs, errors.New("ID missing"))
	}
	if p.Issuer == "" {
		errs = append(errs, errors.New("Issuer missing"))
	}
	for _, link := range [...]struct{ name, value string }{{"HRef", p.HRef}, {"Anchor", p.Anchor}} {
		if !strings.HasPrefix(link.value, hashlinkPrefix) || len(link.value) == len(hashlinkPrefix) {
			errs = append(errs, fmt.Errorf("%s %q is not a hashlink", link.name, link.value))
		}
	}
	if p.Issued.IsZero() {
		errs = append(errs, errors.New("issued time missing"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new anchor credential: %w: %w", ErrInvalidCredential, err)
	}
	obj := map[string]any{
		"@context":     []any{ContextCredentialsV1, ContextActivityAnchorsV1, ContextEd25519Signature2020},
		"type":         []any{typeVerifiableCredential, typeAnchorCredential},
		"id":           p.ID,
		"issuer":       p.Issuer,
		"issuanceDate": p.Issued.UTC().Format(time.RFC3339Nano),
		"credentialSubject": map[string]any{
			"type":    []any{typeAnchorLink},
			"rel":     relLinkset,
			"href":    p.HRef,
			"anchor":  p.Anchor,
			"profile": profile,
		},
	}
	return &Credential{obj: obj}, nil
}

// AnchorSubject reads the credential's subject as an anchor link.
func (c *Credential) AnchorSubject() (AnchorSubject, error) {
	m, ok := c.obj["credentialSubject"].(map[string]any)
	if !ok {
		return AnchorSubject{}, fmt.Errorf("anchor subject: %w: credentialSubject is not one object", ErrInvalidCredential)
	}
	types, err := stringList(m["type"])
	if err != nil || !slices.Contains(types, typeAnchorLink) {
		return AnchorSubject{}, fmt.Errorf("anchor subject: %w: type is not %s", ErrInvalidCredential, typeAnchorLink)
	}
	var s AnchorSubject
	for name, dst := range map[string]*string{"href": &s.HRef, "anchor": &s.Anchor, "profile": &s.Profile} {
		v, _ := m[name].(string)
		if v == "" {
			return AnchorSubject{}, fmt.Errorf("anchor subject: %w: %s missing", ErrInvalidCredential, name)
		}
		*dst = v
	}
	return s, nil
}
