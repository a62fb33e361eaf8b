package activity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// JSON-LD contexts, as Orb writes them.
const (
	ContextActivityStreams = "https://www.w3.org/ns/activitystreams"
	ContextSecurity        = "https://w3id.org/security/v1"
	ContextActivityAnchors = "https://w3id.org/activityanchors/v1"
	ContextCredentials     = "https://www.w3.org/2018/credentials/v1"
	ContextEd25519         = "https://w3id.org/security/suites/ed25519-2020/v1"
)

// Well-known IRIs.
const (
	// PublicIRI addresses an activity to everyone.
	PublicIRI = "https://www.w3.org/ns/activitystreams#Public"
	// AnchorWitnessIRI is the object of an Invite and the target of an Offer.
	AnchorWitnessIRI = "https://w3id.org/activityanchors#AnchorWitness"
	// ProfileOrbV0 is the profile of did:orb anchor linksets (Orb's generator ID).
	ProfileOrbV0 = "https://w3id.org/orb#v0"
)

// Media types.
const (
	// MediaTypeActivity is the Content-Type of activities, actors and collections.
	MediaTypeActivity = "application/activity+json"
	// MediaTypeLinkset types a reference whose content is a linkset.
	MediaTypeLinkset = "application/linkset+json"
	// MediaTypeJSONLD types a reference whose content is a JSON-LD document (the credential).
	MediaTypeJSONLD = "application/ld+json"
)

// Type is an object's type. On the wire it may be a string or a one-element array.
type Type string

// Activity types.
const (
	TypeFollow   Type = "Follow"
	TypeAccept   Type = "Accept"
	TypeReject   Type = "Reject"
	TypeUndo     Type = "Undo"
	TypeCreate   Type = "Create"
	TypeAnnounce Type = "Announce"
	TypeOffer    Type = "Offer"
	TypeInvite   Type = "Invite"
	TypeLike     Type = "Like"
)

// Object types.
const (
	TypeService               Type = "Service"
	TypeAnchorEvent           Type = "AnchorEvent"
	TypeAnchorReceipt         Type = "AnchorReceipt"
	TypeCollection            Type = "Collection"
	TypeOrderedCollection     Type = "OrderedCollection"
	TypeCollectionPage        Type = "CollectionPage"
	TypeOrderedCollectionPage Type = "OrderedCollectionPage"
)

// IsActivity reports whether t is one of the activity types anchord handles.
func (t Type) IsActivity() bool {
	switch t {
	case TypeFollow, TypeAccept, TypeReject, TypeUndo, TypeCreate, TypeAnnounce, TypeOffer, TypeInvite, TypeLike:
		return true
	}
	return false
}

func (t Type) isCollection() bool {
	switch t {
	case TypeCollection, TypeOrderedCollection, TypeCollectionPage, TypeOrderedCollectionPage:
		return true
	}
	return false
}

// UnmarshalJSON reads a string or an array of exactly one string. Orb allows several types on
// one object, but none of the objects it sends has more than one, and a second type would leave
// the object's meaning to whichever one a reader looks at first.
func (t *Type) UnmarshalJSON(b []byte) error {
	var s Strings
	if err := s.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	if len(s) != 1 {
		return fmt.Errorf("type: %d types, want exactly one", len(s))
	}
	*t = Type(s[0])
	return nil
}

// Strings is a property that is one string or an array of strings on the wire (@context, to,
// url). It marshals one element as a plain string, as Orb does.
type Strings []string

// MarshalJSON writes one element as a string and more as an array.
func (s Strings) MarshalJSON() ([]byte, error) {
	if len(s) == 1 {
		return json.Marshal(s[0])
	}
	return json.Marshal([]string(s))
}

// UnmarshalJSON reads a string or an array of strings.
func (s *Strings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a string or an array of strings")
	}
	*s = many
	return nil
}

// Contains reports whether v is one of s.
func (s Strings) Contains(v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ValidateIRI checks that s is an absolute IRI: a scheme and something after it, no spaces or
// control characters, and parseable as a URL.
func ValidateIRI(s string) error {
	if s == "" {
		return errors.New("empty IRI")
	}
	if len(s) > MaxIRILength {
		return fmt.Errorf("IRI longer than %d bytes", MaxIRILength)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("IRI %q contains a space or control character", s)
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("IRI %q: %w", s, err)
	}
	if u.Scheme == "" || (u.Opaque == "" && u.Host == "" && u.Path == "") {
		return fmt.Errorf("IRI %q is not absolute", s)
	}
	return nil
}

// ValidateActorIRI checks that s can name an actor: an absolute http or https URL with a host,
// or a did:web DID.
func ValidateActorIRI(s string) error {
	if err := ValidateIRI(s); err != nil {
		return err
	}
	if rest, ok := strings.CutPrefix(s, "did:web:"); ok {
		host, _, _ := strings.Cut(rest, ":")
		if host == "" || strings.ContainsAny(rest, "/?#") {
			return fmt.Errorf("actor %q is not a did:web DID", s)
		}
		return nil
	}
	u, _ := url.Parse(s) // ValidateIRI parsed it
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return fmt.Errorf("actor %q is neither an http(s) URL nor a did:web DID", s)
	}
	return nil
}
