package activity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Activity is an ActivityPub activity with the members Orb uses.
type Activity struct {
	Context   Strings    `json:"@context,omitempty"`
	ID        string     `json:"id,omitempty"`
	Type      Type       `json:"type"`
	Actor     string     `json:"actor,omitempty"`
	To        Strings    `json:"to,omitempty"`
	Object    *Object    `json:"object,omitempty"`
	Target    *Object    `json:"target,omitempty"`
	Result    *Object    `json:"result,omitempty"`
	Published *time.Time `json:"published,omitempty"`
	StartTime *time.Time `json:"startTime,omitempty"`
	EndTime   *time.Time `json:"endTime,omitempty"`
}

// Object is the value of object, target or result: exactly one field is set.
type Object struct {
	IRI           string
	Activity      *Activity
	AnchorEvent   *AnchorEvent
	AnchorReceipt *AnchorReceipt
	Collection    *Collection
	// Linkset is an embedded object with no type and a linkset member (an Offer's object).
	Linkset *Linkset
	// Document is any other embedded JSON object, verbatim.
	Document json.RawMessage
}

// IRIObject returns an Object that is a reference.
func IRIObject(iri string) *Object { return &Object{IRI: iri} }

// MarshalJSON writes whichever form is set.
func (o *Object) MarshalJSON() ([]byte, error) {
	switch {
	case o.IRI != "":
		return json.Marshal(o.IRI)
	case o.Activity != nil:
		return json.Marshal(o.Activity)
	case o.AnchorEvent != nil:
		return json.Marshal(o.AnchorEvent)
	case o.AnchorReceipt != nil:
		return json.Marshal(o.AnchorReceipt)
	case o.Collection != nil:
		return json.Marshal(o.Collection)
	case o.Linkset != nil:
		return json.Marshal(o.Linkset)
	case o.Document != nil:
		return o.Document, nil
	}
	return nil, fmt.Errorf("marshal object: empty object property")
}

// UnmarshalJSON reads an IRI or an embedded object and sorts the object by its type.
func (o *Object) UnmarshalJSON(b []byte) error {
	*o = Object{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("empty object property")
	}
	switch b[0] {
	case '"':
		return json.Unmarshal(b, &o.IRI)
	case '{':
	default:
		return fmt.Errorf("object property must be an IRI or an object")
	}
	var head struct {
		Type    *Type           `json:"type"`
		Linkset json.RawMessage `json:"linkset"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	switch {
	case head.Type == nil && head.Linkset != nil:
		o.Linkset = &Linkset{}
		return json.Unmarshal(b, o.Linkset)
	case head.Type == nil:
	case head.Type.IsActivity():
		o.Activity = &Activity{}
		return json.Unmarshal(b, o.Activity)
	case *head.Type == TypeAnchorEvent:
		o.AnchorEvent = &AnchorEvent{}
		return json.Unmarshal(b, o.AnchorEvent)
	case *head.Type == TypeAnchorReceipt:
		o.AnchorReceipt = &AnchorReceipt{}
		return json.Unmarshal(b, o.AnchorReceipt)
	case head.Type.isCollection():
		o.Collection = &Collection{}
		return json.Unmarshal(b, o.Collection)
	}
	o.Document = append(json.RawMessage(nil), b...)
	return nil
}

// Parse reads an activity strictly within the default limits (MaxActivityBytesDefault,
// MaxDepthDefault, MaxItemsDefault) and validates it: see (*Activity).Validate. Errors wrap
// ErrInvalid.
func Parse(data []byte) (*Activity, error) {
	return ParseWithLimits(data, Limits{})
}

// ParseWithLimits is Parse with other bounds; zero fields keep the defaults.
func ParseWithLimits(data []byte, l Limits) (*Activity, error) {
	if err := checkJSON(data, l.withDefaults(MaxActivityBytesDefault, MaxItemsDefault)); err != nil {
		return nil, fmt.Errorf("parse activity: %w", err)
	}
	var a Activity
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("parse activity: %w", invalid("%v", err))
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("parse activity: %w", err)
	}
	return &a, nil
}

// Validate checks what every activity anchord accepts must satisfy, whatever its type: a known
// activity type; id an IRI; actor an http(s) URL or did:web; every to an IRI; an object; and the
// same, recursively, for embedded activities, anchor events, receipts and collections (where an
// embedded activity's id and actor may be absent). Per-type rules (an Offer's time window, an
// Accept's match with what it accepts) are the handlers'.
func (a *Activity) Validate() error {
	return a.validate(true)
}

func (a *Activity) validate(top bool) error {
	if !a.Type.IsActivity() {
		return invalid("activity type %q not supported", a.Type)
	}
	if top || a.ID != "" {
		if err := ValidateIRI(a.ID); err != nil {
			return invalid("%s id: %v", a.Type, err)
		}
	}
	if top || a.Actor != "" {
		if err := ValidateActorIRI(a.Actor); err != nil {
			return invalid("%s actor: %v", a.Type, err)
		}
	}
	for _, to := range a.To {
		if err := ValidateIRI(to); err != nil {
			return invalid("%s to: %v", a.Type, err)
		}
	}
	if err := validateContext(a.Context); err != nil {
		return fmt.Errorf("%s: %w", a.Type, err)
	}
	if a.Object == nil {
		return invalid("%s has no object", a.Type)
	}
	for _, p := range []struct {
		name string
		o    *Object
	}{{"object", a.Object}, {"target", a.Target}, {"result", a.Result}} {
		if err := p.o.validate(); err != nil {
			return fmt.Errorf("%s %s: %w", a.Type, p.name, err)
		}
	}
	return nil
}

func validateContext(ctx Strings) error {
	for _, c := range ctx {
		if err := ValidateIRI(c); err != nil {
			return invalid("@context: %v", err)
		}
	}
	return nil
}

func (o *Object) validate() error {
	switch {
	case o == nil:
		return nil
	case o.IRI != "":
		if err := ValidateIRI(o.IRI); err != nil {
			return invalid("%v", err)
		}
	case o.Activity != nil:
		return o.Activity.validate(false)
	case o.AnchorEvent != nil:
		return o.AnchorEvent.validate()
	case o.AnchorReceipt != nil:
		return o.AnchorReceipt.validate()
	case o.Collection != nil:
		return o.Collection.validate()
	case o.Linkset != nil:
		return o.Linkset.validateShape()
	case o.Document != nil:
	default:
		return invalid("empty object")
	}
	return nil
}
