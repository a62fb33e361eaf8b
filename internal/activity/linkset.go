package activity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Linkset is an RFC 9264 linkset as Orb uses it: the anchor linkset and the nested "original"
// and "related" linksets.
type Linkset struct {
	Linkset []Link `json:"linkset"`
}

// Link is one link of a linkset. The field order and omissions are Orb's, so that the JCS form of
// a Linkset built here hashes as Orb's does (profile is written even when empty, as null).
type Link struct {
	Anchor   string `json:"anchor"`
	Profile  Refs   `json:"profile"`
	Author   Refs   `json:"author,omitempty"`
	Item     []Item `json:"item,omitempty"`
	Original Refs   `json:"original,omitempty"`
	Related  Refs   `json:"related,omitempty"`
	Replies  Refs   `json:"replies,omitempty"`
	Up       Refs   `json:"up,omitempty"`
	Via      Refs   `json:"via,omitempty"`
}

// Ref is a link target: a URI and, for data URIs, the media type of the content.
type Ref struct {
	HRef string `json:"href"`
	Type string `json:"type,omitempty"`
}

// Refs is a link relation's targets. It marshals as an array of {href[, type]} (Orb's form) and
// also reads a bare string, a single object, or an array mixing both.
type Refs []Ref

// Item is an entry of an "original" linkset: a DID and the anchor its previous operation is in.
type Item struct {
	HRef     string   `json:"href"`
	Previous []string `json:"previous,omitempty"`
}

// HRefs returns the targets' URIs.
func HRefs(refs Refs) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.HRef)
	}
	return out
}

// First returns the first target's URI, or "".
func (r Refs) First() string {
	if len(r) == 0 {
		return ""
	}
	return r[0].HRef
}

// UnmarshalJSON reads an array of {href, type} or strings, or one of either.
func (r *Refs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*r = nil
		return nil
	}
	if len(b) > 0 && b[0] != '[' {
		var one Ref
		if err := one.UnmarshalJSON(b); err != nil {
			return err
		}
		*r = Refs{one}
		return nil
	}
	var many []Ref
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*r = many
	return nil
}

// UnmarshalJSON reads {href[, type]} or a bare href string.
func (r *Ref) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*r = Ref{}
		return json.Unmarshal(b, &r.HRef)
	}
	type plain Ref
	var p plain
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &p) != nil {
		return errors.New("link target: want {href, type} or a string")
	}
	if p.HRef == "" {
		return errors.New("link target without href")
	}
	*r = Ref(p)
	return nil
}

// Content decodes the target's data URI, bounded by maxBytes (0: MaxDataURIBytesDefault). A
// target that is not a data URI has no content here; fetching it is the caller's business.
func (r Ref) Content(maxBytes int) ([]byte, error) {
	return DecodeDataURI(r.HRef, maxBytes)
}

// Linkset decodes the target's data URI as a linkset. Its type must be application/linkset+json.
func (r Ref) Linkset() (*Linkset, error) {
	if r.Type != MediaTypeLinkset {
		return nil, invalid("reference type is %q, want %s", r.Type, MediaTypeLinkset)
	}
	content, err := r.Content(MaxLinksetBytesDefault)
	if err != nil {
		return nil, err
	}
	return ParseLinkset(content)
}

// ParseLinkset reads a linkset within the linkset limits (MaxLinksetBytesDefault, MaxDepthDefault,
// MaxLinksetItemsDefault). It checks the shape only; (*Link).Validate checks an anchor link.
func ParseLinkset(data []byte) (*Linkset, error) {
	return ParseLinksetWithLimits(data, Limits{})
}

// ParseLinksetWithLimits is ParseLinkset with other bounds.
func ParseLinksetWithLimits(data []byte, l Limits) (*Linkset, error) {
	if err := checkJSON(data, l.withDefaults(MaxLinksetBytesDefault, MaxLinksetItemsDefault)); err != nil {
		return nil, fmt.Errorf("parse linkset: %w", err)
	}
	var ls Linkset
	if err := json.Unmarshal(data, &ls); err != nil {
		return nil, fmt.Errorf("parse linkset: %w", invalid("%v", err))
	}
	if err := ls.validateShape(); err != nil {
		return nil, fmt.Errorf("parse linkset: %w", err)
	}
	return &ls, nil
}

// validateShape checks what every linkset must have: at least one link, each with an anchor.
func (ls *Linkset) validateShape() error {
	if len(ls.Linkset) == 0 {
		return invalid("empty linkset")
	}
	for i := range ls.Linkset {
		if ls.Linkset[i].Anchor == "" {
			return invalid("link %d has no anchor", i)
		}
	}
	return nil
}

// Link returns the first link, which is the one Orb reads, or nil.
func (ls *Linkset) Link() *Link {
	if ls == nil || len(ls.Linkset) == 0 {
		return nil
	}
	return &ls.Linkset[0]
}

// Canonical returns the JCS form of the linkset: the bytes its hashlink and CAS address are
// computed over.
func (ls *Linkset) Canonical() ([]byte, error) {
	raw, err := json.Marshal(ls)
	if err != nil {
		return nil, fmt.Errorf("marshal linkset: %w", err)
	}
	return canonical(raw)
}

// Validate checks an anchor link as Orb does before it witnesses or processes one, and more:
// anchor is a hashlink without metadata; author and profile are present and IRIs; "original", if
// present, is a data URI whose decoded content hashes to anchor; "related" and "replies", if
// present, decode (Orb means to check replies but checks related twice).
func (l *Link) Validate() error {
	if l == nil {
		return invalid("nil link")
	}
	h, err := ParseHashlink(l.Anchor)
	if err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	if h.Links != nil {
		return invalid("anchor %q carries metadata", l.Anchor)
	}
	if err := ValidateIRI(l.Author.First()); err != nil {
		return invalid("author: %v", err)
	}
	if err := ValidateIRI(l.Profile.First()); err != nil {
		return invalid("profile: %v", err)
	}
	if len(l.Original) > 0 {
		content, err := l.Original[0].Content(MaxLinksetBytesDefault)
		if err != nil {
			return fmt.Errorf("original: %w", err)
		}
		if err := h.Verify(content); err != nil {
			return fmt.Errorf("original: %w", err)
		}
	}
	if len(l.Related) > 0 {
		if _, err := l.Related[0].Content(MaxLinksetBytesDefault); err != nil {
			return fmt.Errorf("related: %w", err)
		}
	}
	if len(l.Replies) > 0 {
		if _, err := l.Replies[0].Content(MaxLinksetBytesDefault); err != nil {
			return fmt.Errorf("replies: %w", err)
		}
	}
	return nil
}
