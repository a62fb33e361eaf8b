package activity

import (
	"fmt"
	"strings"
)

// The did:orb content layout (Orb's did:orb generator, profile https://w3id.org/orb#v0).
const (
	didOrbPrefix = "did:orb:"
	// unpublishedLabel stands for the previous anchor of a DID that has none (a create).
	unpublishedLabel = "uAAA"
)

// AnchorContent is what an anchor says: which batch (its core index) and, for every DID in it,
// the anchor of the DID's previous operation.
type AnchorContent struct {
	// CoreIndex is the hashlink of the batch's core index file; its metadata (where to fetch
	// it) travels in related.via and is not part of the anchor's hash.
	CoreIndex string
	// Author is the anchor origin: this domain's actor IRI or did:web.
	Author string
	// Profile is the generator; only ProfileOrbV0 is known. Empty means ProfileOrbV0.
	Profile string
	// Operations lists the batch's DIDs, in batch order.
	Operations []SuffixAnchor
}

// SuffixAnchor is one DID of a batch and the anchor its previous operation is in.
type SuffixAnchor struct {
	Suffix string
	// Previous is the previous anchor's hashlink, with metadata if known; empty for a create.
	Previous string
}

// BuildAnchorLink lays out c as Orb's did:orb anchor link (see the package documentation).
// mediaType is MediaTypeGzipBase64 (Orb's default) or MediaTypeJSON. credential receives the
// anchor hashlink and the core index hashlink (without metadata) and returns the anchor
// credential, whose JCS form becomes "replies"; it is a function because the credential's subject
// names the anchor, which only exists once "original" does.
func BuildAnchorLink(c AnchorContent, mediaType string, credential func(anchor, coreIndex string) ([]byte, error)) (*Link, error) {
	original, err := c.Original()
	if err != nil {
		return nil, fmt.Errorf("build anchor link: %w", err)
	}
	anchor := NewHashlink(original)
	core, _ := ParseHashlink(c.CoreIndex) // Original parsed it
	vc, err := credential(anchor, core.Anchor())
	if err != nil {
		return nil, fmt.Errorf("build anchor link: credential: %w", err)
	}
	vc, err = canonical(vc)
	if err != nil {
		return nil, fmt.Errorf("build anchor link: credential: %w", err)
	}
	related, err := (&Linkset{Linkset: []Link{{
		Anchor:  anchor,
		Profile: Refs{{HRef: c.profile()}},
		Via:     Refs{{HRef: c.CoreIndex}},
		Up:      c.parents(),
	}}}).Canonical()
	if err != nil {
		return nil, fmt.Errorf("build anchor link: %w", err)
	}
	uris := make([]string, 3)
	for i, content := range [][]byte{original, related, vc} {
		if uris[i], err = NewDataURI(content, mediaType); err != nil {
			return nil, fmt.Errorf("build anchor link: %w", err)
		}
	}
	return &Link{
		Anchor:   anchor,
		Author:   Refs{{HRef: c.Author}},
		Profile:  Refs{{HRef: c.profile()}},
		Original: Refs{{HRef: uris[0], Type: MediaTypeLinkset}},
		Related:  Refs{{HRef: uris[1], Type: MediaTypeLinkset}},
		Replies:  Refs{{HRef: uris[2], Type: MediaTypeJSONLD}},
	}, nil
}

func (c AnchorContent) profile() string {
	if c.Profile == "" {
		return ProfileOrbV0
	}
	return c.Profile
}

// Original returns the JCS bytes of c's "original" linkset, the content the anchor hashlink names.
func (c AnchorContent) Original() ([]byte, error) {
	if c.profile() != ProfileOrbV0 {
		return nil, invalid("profile %q not supported", c.Profile)
	}
	core, err := ParseHashlink(c.CoreIndex)
	if err != nil {
		return nil, fmt.Errorf("core index: %w", err)
	}
	if err := ValidateIRI(c.Author); err != nil {
		return nil, invalid("author: %v", err)
	}
	if len(c.Operations) == 0 {
		return nil, invalid("no operations")
	}
	items := make([]Item, 0, len(c.Operations))
	for _, op := range c.Operations {
		if op.Suffix == "" || strings.Contains(op.Suffix, ":") {
			return nil, invalid("suffix %q", op.Suffix)
		}
		if op.Previous == "" {
			items = append(items, Item{HRef: didOrbPrefix + unpublishedLabel + ":" + op.Suffix})
			continue
		}
		prev, err := ParseHashlink(op.Previous)
		if err != nil {
			return nil, fmt.Errorf("previous anchor of %s: %w", op.Suffix, err)
		}
		items = append(items, Item{
			HRef:     didOrbPrefix + prev.ResourceHash() + ":" + op.Suffix,
			Previous: []string{prev.Anchor()},
		})
	}
	return (&Linkset{Linkset: []Link{{
		Anchor:  core.Anchor(),
		Author:  Refs{{HRef: c.Author}},
		Profile: Refs{{HRef: c.profile()}},
		Item:    items,
	}}}).Canonical()
}

// parents lists the distinct previous anchors in order of first use: related.up.
func (c AnchorContent) parents() Refs {
	var up Refs
	seen := map[string]bool{}
	for _, op := range c.Operations {
		if op.Previous != "" && !seen[op.Previous] {
			seen[op.Previous] = true
			up = append(up, Ref{HRef: op.Previous})
		}
	}
	return up
}

// AnchorContent reads the content of a did:orb anchor link, as Orb does when it processes one:
// the original and related linksets must decode, related's anchor must equal the link's,
// related.via names the core index and must extend original's anchor, and every item with a
// previous anchor must find it (by prefix) in related.up. It does not check the anchor hash;
// Validate does.
func (l *Link) AnchorContent() (*AnchorContent, error) {
	if l.Profile.First() != ProfileOrbV0 {
		return nil, invalid("profile %q not supported", l.Profile.First())
	}
	if len(l.Original) == 0 || len(l.Related) == 0 {
		return nil, invalid("anchor link needs original and related")
	}
	original, err := l.Original[0].Linkset()
	if err != nil {
		return nil, fmt.Errorf("original: %w", err)
	}
	related, err := l.Related[0].Linkset()
	if err != nil {
		return nil, fmt.Errorf("related: %w", err)
	}
	content, rel := original.Link(), related.Link()
	if rel.Anchor != l.Anchor {
		return nil, invalid("related anchor %q is not the link's anchor %q", rel.Anchor, l.Anchor)
	}
	coreIndex := rel.Via.First()
	if _, err := ParseHashlink(coreIndex); err != nil {
		return nil, fmt.Errorf("related via: %w", err)
	}
	if !strings.HasPrefix(coreIndex, content.Anchor) {
		return nil, invalid("core index %q is not related to %q", coreIndex, content.Anchor)
	}
	if content.Profile.First() != ProfileOrbV0 {
		return nil, invalid("original profile %q not supported", content.Profile.First())
	}
	up := HRefs(rel.Up)
	ac := &AnchorContent{
		CoreIndex:  coreIndex,
		Author:     content.Author.First(),
		Profile:    ProfileOrbV0,
		Operations: make([]SuffixAnchor, 0, len(content.Item)),
	}
	for _, item := range content.Item {
		op, err := suffixAnchor(item, up)
		if err != nil {
			return nil, err
		}
		ac.Operations = append(ac.Operations, op)
	}
	return ac, nil
}

func suffixAnchor(item Item, up []string) (SuffixAnchor, error) {
	rest, ok := strings.CutPrefix(item.HRef, didOrbPrefix)
	if !ok {
		return SuffixAnchor{}, invalid("item %q is not a did:orb DID", item.HRef)
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 || i == len(rest)-1 {
		return SuffixAnchor{}, invalid("item %q has no suffix", item.HRef)
	}
	op := SuffixAnchor{Suffix: rest[i+1:]}
	if len(item.Previous) == 0 {
		return op, nil
	}
	for _, parent := range up {
		if strings.HasPrefix(parent, item.Previous[0]) {
			op.Previous = parent
			return op, nil
		}
	}
	return SuffixAnchor{}, invalid("previous anchor %q of %s is not in related.up", item.Previous[0], op.Suffix)
}

// CredentialSubject is the subject of Orb's anchor credential (the VC in "replies"): it binds the
// anchor (href) to the core index (anchor) under the profile.
type CredentialSubject struct {
	HRef    string   `json:"href"`
	Profile string   `json:"profile"`
	Anchor  string   `json:"anchor"`
	Type    []string `json:"type"`
	Rel     string   `json:"rel"`
}

// NewCredentialSubject returns the subject Orb writes for an anchor and its core index (the
// arguments BuildAnchorLink passes to its credential function).
func NewCredentialSubject(anchor, coreIndex string) CredentialSubject {
	return CredentialSubject{HRef: anchor, Profile: ProfileOrbV0, Anchor: coreIndex, Type: []string{"AnchorLink"}, Rel: "linkset"}
}

// Check applies Orb's checks of a credential subject against the anchor link it came with: href
// is the hashlink of the original content, the profile is did:orb's, anchor is the original
// linkset's anchor, and rel is "linkset".
func (s CredentialSubject) Check(l *Link) error {
	if len(l.Original) == 0 {
		return invalid("anchor link has no original")
	}
	content, err := l.Original[0].Content(MaxLinksetBytesDefault)
	if err != nil {
		return fmt.Errorf("original: %w", err)
	}
	original, err := ParseLinkset(content)
	if err != nil {
		return fmt.Errorf("original: %w", err)
	}
	switch {
	case s.Rel != "linkset":
		return invalid("credential subject rel %q, want linkset", s.Rel)
	case s.Profile != ProfileOrbV0:
		return invalid("credential subject profile %q not supported", s.Profile)
	case s.HRef != NewHashlink(content):
		return invalid("credential subject href %q is not the hashlink of the original content", s.HRef)
	case s.Anchor != original.Link().Anchor:
		return invalid("credential subject anchor %q is not the original's anchor %q", s.Anchor, original.Link().Anchor)
	}
	return nil
}
