package activity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Collection paths under an actor, as Orb names them.
const (
	PathInbox      = "/inbox"
	PathOutbox     = "/outbox"
	PathFollowers  = "/followers"
	PathFollowing  = "/following"
	PathWitnesses  = "/witnesses"
	PathWitnessing = "/witnessing"
	PathLiked      = "/liked"
	PathLikes      = "/likes"
	PathShares     = "/shares"
	// PathMainKey is the HTTP-signature key under the actor: keyId = actor + PathMainKey.
	PathMainKey = "/keys/main-key"
)

// Actor is a domain's service actor document.
type Actor struct {
	Context    Strings    `json:"@context,omitempty"`
	ID         string     `json:"id"`
	Type       Type       `json:"type"`
	PublicKey  *PublicKey `json:"publicKey,omitempty"`
	Inbox      string     `json:"inbox,omitempty"`
	Outbox     string     `json:"outbox,omitempty"`
	Followers  string     `json:"followers,omitempty"`
	Following  string     `json:"following,omitempty"`
	Witnesses  string     `json:"witnesses,omitempty"`
	Witnessing string     `json:"witnessing,omitempty"`
	Liked      string     `json:"liked,omitempty"`
	Likes      string     `json:"likes,omitempty"`
	Shares     string     `json:"shares,omitempty"`
}

// PublicKey is the actor's HTTP-signature key. An actor whose ID is a DID names its key by
// reference (a bare string on the wire): then only ID is set.
type PublicKey struct {
	ID    string `json:"id"`
	Owner string `json:"owner,omitempty"`
	// PublicKeyPem is, for Orb compatibility, a PEM block of type "Ed25519" holding the raw
	// 32-byte key (not SPKI).
	PublicKeyPem string `json:"publicKeyPem,omitempty"`
}

// MarshalJSON writes a reference-only key as its bare ID.
func (k PublicKey) MarshalJSON() ([]byte, error) {
	if k.Owner == "" && k.PublicKeyPem == "" {
		return json.Marshal(k.ID)
	}
	type plain PublicKey
	return json.Marshal(plain(k))
}

// UnmarshalJSON reads the embedded key or a bare key ID.
func (k *PublicKey) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*k = PublicKey{}
		return json.Unmarshal(b, &k.ID)
	}
	type plain PublicKey
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*k = PublicKey(p)
	return nil
}

// NewService returns the actor document of a service whose ID is an http(s) URL, with Orb's
// contexts, collection IRIs and key ID.
func NewService(id, publicKeyPem string) *Actor {
	return &Actor{
		Context:    Strings{ContextActivityStreams, ContextSecurity, ContextActivityAnchors},
		ID:         id,
		Type:       TypeService,
		PublicKey:  &PublicKey{ID: id + PathMainKey, Owner: id, PublicKeyPem: publicKeyPem},
		Inbox:      id + PathInbox,
		Outbox:     id + PathOutbox,
		Followers:  id + PathFollowers,
		Following:  id + PathFollowing,
		Witnesses:  id + PathWitnesses,
		Witnessing: id + PathWitnessing,
		Liked:      id + PathLiked,
		Likes:      id + PathLikes,
		Shares:     id + PathShares,
	}
}

// ParseActor reads an actor document within the default activity limits. The actor's ID must
// be an http(s) URL or did:web and its inbox an http(s) URL; the other collections, if present,
// must be IRIs; an embedded key must name its ID and owner.
func ParseActor(data []byte) (*Actor, error) {
	if err := checkJSON(data, Limits{}.withDefaults(MaxActivityBytesDefault, MaxItemsDefault)); err != nil {
		return nil, fmt.Errorf("parse actor: %w", err)
	}
	var a Actor
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("parse actor: %w", invalid("%v", err))
	}
	if err := a.validate(); err != nil {
		return nil, fmt.Errorf("parse actor: %w", err)
	}
	return &a, nil
}

func (a *Actor) validate() error {
	if err := ValidateActorIRI(a.ID); err != nil {
		return invalid("id: %v", err)
	}
	if err := ValidateActorIRI(a.Inbox); err != nil || !strings.HasPrefix(a.Inbox, "http") {
		return invalid("inbox %q is not an http(s) URL", a.Inbox)
	}
	for _, c := range []string{a.Outbox, a.Followers, a.Following, a.Witnesses, a.Witnessing, a.Liked, a.Likes, a.Shares} {
		if c == "" {
			continue
		}
		if err := ValidateIRI(c); err != nil {
			return invalid("collection: %v", err)
		}
	}
	if k := a.PublicKey; k != nil {
		if err := ValidateIRI(k.ID); err != nil {
			return invalid("publicKey id: %v", err)
		}
		if k.PublicKeyPem != "" {
			if err := ValidateIRI(k.Owner); err != nil {
				return invalid("publicKey owner: %v", err)
			}
		}
	}
	return validateContext(a.Context)
}
