package activity

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// AnchorEvent announces an anchor: url is the hashlink of the anchor linkset (with metadata
// saying where to fetch it), object the linkset itself unless the event is a bare reference.
type AnchorEvent struct {
	Context Strings  `json:"@context,omitempty"`
	Type    Type     `json:"type"`
	URL     Strings  `json:"url,omitempty"`
	Object  *Linkset `json:"object,omitempty"`

	// objectJSON is object as received: url hashes the sender's bytes, which need not be a
	// form this package would write.
	objectJSON json.RawMessage
}

// NewAnchorEvent returns an AnchorEvent for the anchor linkset ls (nil: a bare reference) stored
// under the hashlink url.
func NewAnchorEvent(url string, ls *Linkset) *AnchorEvent {
	return &AnchorEvent{Context: Strings{ContextActivityAnchors}, Type: TypeAnchorEvent, URL: Strings{url}, Object: ls}
}

// UnmarshalJSON keeps the embedded linkset's text for VerifyURL.
func (e *AnchorEvent) UnmarshalJSON(b []byte) error {
	type plain AnchorEvent
	var aux struct {
		plain
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*e = AnchorEvent(aux.plain)
	if len(aux.Object) > 0 && string(aux.Object) != "null" {
		e.Object = &Linkset{}
		if err := json.Unmarshal(aux.Object, e.Object); err != nil {
			return fmt.Errorf("anchor event object: %w", err)
		}
		e.objectJSON = aux.Object
	}
	return nil
}

// Hashlink returns the event's url: exactly one hashlink.
func (e *AnchorEvent) Hashlink() (Hashlink, error) {
	if len(e.URL) != 1 {
		return Hashlink{}, invalid("anchor event has %d urls, want 1", len(e.URL))
	}
	return ParseHashlink(e.URL[0])
}

// VerifyURL checks, as Orb does, that url is one hashlink and that an embedded linkset hashes to
// it: sha2-256 of the JCS form of the object as received (as built, for an event built here).
func (e *AnchorEvent) VerifyURL() error {
	h, err := e.Hashlink()
	if err != nil {
		return fmt.Errorf("anchor event url: %w", err)
	}
	if e.Object == nil {
		return nil
	}
	var content []byte
	if e.objectJSON != nil {
		content, err = canonical(e.objectJSON)
	} else {
		content, err = e.Object.Canonical()
	}
	if err != nil {
		return fmt.Errorf("anchor event object: %w", err)
	}
	if err := h.Verify(content); err != nil {
		return fmt.Errorf("anchor event object: %w", err)
	}
	return nil
}

func (e *AnchorEvent) validate() error {
	if e.Type != TypeAnchorEvent {
		return invalid("type %q, want %s", e.Type, TypeAnchorEvent)
	}
	if _, err := e.Hashlink(); err != nil {
		return fmt.Errorf("anchor event url: %w", err)
	}
	if e.Object != nil {
		if err := e.Object.validateShape(); err != nil {
			return fmt.Errorf("anchor event object: %w", err)
		}
	}
	return validateContext(e.Context)
}

// AnchorReceipt is a witness's answer to an Offer (the result of its Accept): the anchor it
// witnessed, the window in which its proof is good, and the proof as an attachment.
type AnchorReceipt struct {
	Context   Strings    `json:"@context,omitempty"`
	Type      Type       `json:"type"`
	InReplyTo string     `json:"inReplyTo,omitempty"`
	StartTime *time.Time `json:"startTime,omitempty"`
	EndTime   *time.Time `json:"endTime,omitempty"`
	// Attachment holds the proofs, each {"@context": …, "proof": {…}}, verbatim: they are signed
	// JSON-LD and must reach the verifier byte for byte.
	Attachment []json.RawMessage `json:"attachment,omitempty"`
	// Log is anchord's extension: where the witness logged the credential it signed. Orb's
	// receipt has no such member and Orb ignores members it does not know, so an Orb origin
	// reads the receipt as before.
	Log *ReceiptLog `json:"log,omitempty"`
}

// ReceiptLog names the entry a witness promises is in its witness log: the log's origin (the
// first line of its checkpoints) and the leaf index. The entry is the JCS form of the offered
// credential without proofs, so the origin can recompute it; the promise holds until the
// receipt's endTime.
type ReceiptLog struct {
	Origin string `json:"origin"`
	Index  uint64 `json:"index"`
}

// maxLogOrigin bounds a receipt's log origin (a host, a port and a path).
const maxLogOrigin = 512

func (l *ReceiptLog) validate() error {
	switch {
	case l.Origin == "" || len(l.Origin) > maxLogOrigin:
		return invalid("anchor receipt log origin must have 1 to %d bytes", maxLogOrigin)
	case strings.ContainsFunc(l.Origin, func(r rune) bool { return r <= ' ' || r == 0x7f || r == utf8.RuneError }):
		return invalid("anchor receipt log origin %q has spaces or control characters", l.Origin)
	case l.Index > math.MaxInt64:
		return invalid("anchor receipt log index %d is too large", l.Index)
	}
	return nil
}

func (r *AnchorReceipt) validate() error {
	if r.Type != TypeAnchorReceipt {
		return invalid("type %q, want %s", r.Type, TypeAnchorReceipt)
	}
	if r.InReplyTo != "" {
		if _, err := ParseHashlink(r.InReplyTo); err != nil {
			return fmt.Errorf("anchor receipt inReplyTo: %w", err)
		}
	}
	for i, a := range r.Attachment {
		if len(a) == 0 || a[0] != '{' {
			return invalid("anchor receipt attachment %d is not an object", i)
		}
	}
	if r.Log != nil {
		if err := r.Log.validate(); err != nil {
			return err
		}
	}
	return validateContext(r.Context)
}
