package origin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/sidetree"
)

// result is the part of a did:orb resolution result that Orb's rules compare, and the lists an
// origin merges from.
type result struct {
	Document json.RawMessage `json:"didDocument"`
	Meta     struct {
		CanonicalID json.RawMessage `json:"canonicalId"`
		Method      struct {
			PublishedFlag      json.RawMessage `json:"published"`
			AnchorOrigin       json.RawMessage `json:"anchorOrigin"`
			UpdateCommitment   json.RawMessage `json:"updateCommitment"`
			RecoveryCommitment json.RawMessage `json:"recoveryCommitment"`
			Unpublished        []listed        `json:"unpublishedOperations"`
			Published          []listed        `json:"publishedOperations"`
		} `json:"method"`
	} `json:"didDocumentMetadata"`
}

// listed is an operation as Orb lists it (sidetree-go's PublishedOperation and
// UnpublishedOperation; anchorOrigin is not read).
type listed struct {
	Type                 sidetree.OperationType `json:"type"`
	Operation            []byte                 `json:"operation"`
	TransactionTime      int64                  `json:"transactionTime"`
	CanonicalReference   string                 `json:"canonicalReference"`
	EquivalentReferences []string               `json:"equivalentReferences"`
}

// parseResult reads a resolution result, the local one or an origin's.
func parseResult(body []byte) (*result, error) {
	var r result
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalid, err)
	}
	return &r, nil
}

// parseAnswer reads an origin's resolution result. Decoding costs memory per JSON value, not
// per byte (4 MiB of "{}," took 600 MiB to decode as listed operations, 4 MiB of "[]," 200 MiB
// as a document to compare), so an answer with more values than an honest one holds is refused
// before it is decoded.
func parseAnswer(body []byte, maxOps int) (*result, error) {
	if limit := answerValues(maxOps); moreValues(body, limit) {
		return nil, fmt.Errorf("%w: more than %d JSON values", errInvalid, limit)
	}
	return parseResult(body)
}

// answerValues bounds the JSON values of an answer listing at most maxOps operations: an honest
// one holds a document (64 KiB at most here, so fewer than 32Ki values), a few metadata members
// and about a dozen values per operation; this is twice as many.
func answerValues(maxOps int) int { return 1<<16 + 32*maxOps }

// moreValues reports whether the JSON text body holds more than limit values, counting what
// starts one (an opening bracket, or a comma or colon outside strings) without decoding it.
func moreValues(body []byte, limit int) bool {
	n, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[' || c == ',' || c == ':':
			if n++; n > limit {
				return true
			}
		}
	}
	return false
}

// anchorOrigin is the result's anchor origin, "" when it names none (or not as a string).
func (r *result) anchorOrigin() string {
	var s string
	if json.Unmarshal(r.Meta.Method.AnchorOrigin, &s) != nil {
		return ""
	}
	return s
}

// published reports whether the result is of a DID anchored here: only such a DID has a head
// the origin's operations can be merged after (a long-form name or an unpublished create has
// none, and its anchorOrigin is whatever the client wrote).
func (r *result) published() bool {
	return bytes.Equal(bytes.TrimSpace(r.Meta.Method.PublishedFlag), []byte("true"))
}

// operations converts the origin's lists, within maxOps and Orb's operation size.
func (r *result) operations(maxOps int) (published, unpublished []observer.OriginOperation, err error) {
	m := r.Meta.Method
	if n := len(m.Published) + len(m.Unpublished); n > maxOps {
		return nil, nil, fmt.Errorf("%w: %d operations listed, at most %d taken", errInvalid, n, maxOps)
	}
	convert := func(l listed) (observer.OriginOperation, error) {
		if len(l.Operation) > sidetree.OrbMaxOperationSize {
			return observer.OriginOperation{}, fmt.Errorf("%w: an operation of %d bytes", errInvalid, len(l.Operation))
		}
		o := observer.OriginOperation{Type: l.Type, Request: l.Operation, Time: time.Unix(max(l.TransactionTime, 0), 0)}
		return o, nil
	}
	for _, l := range m.Published {
		o, err := convert(l)
		if err != nil {
			return nil, nil, err
		}
		if o.Ref = l.CanonicalReference; o.Ref == "" {
			return nil, nil, fmt.Errorf("%w: a published operation without canonicalReference", errInvalid)
		}
		for _, ref := range l.EquivalentReferences {
			if sidetree.OrbAnchorHash(ref) == o.Ref {
				o.Hashlink = ref
				break
			}
		}
		published = append(published, o)
	}
	for _, l := range m.Unpublished {
		o, err := convert(l)
		if err != nil {
			return nil, nil, err
		}
		unpublished = append(unpublished, o)
	}
	return published, unpublished, nil
}

// agree applies Orb's rules to the origin's answer and the merged local result: the same
// document (compared canonically), the same update and recovery commitments (both present),
// the same anchor origin and the same canonicalId. It returns what differs, "" when they agree.
func agree(origin, merged *result) string {
	if !sameJSON(origin.Document, merged.Document) {
		return "document"
	}
	o, m := origin.Meta.Method, merged.Meta.Method
	for _, c := range []struct {
		name string
		a, b json.RawMessage
	}{{"updateCommitment", o.UpdateCommitment, m.UpdateCommitment}, {"recoveryCommitment", o.RecoveryCommitment, m.RecoveryCommitment}} {
		if len(c.a) == 0 || len(c.b) == 0 {
			return c.name + " missing"
		}
		if !sameJSON(c.a, c.b) {
			return c.name
		}
	}
	if !sameJSON(o.AnchorOrigin, m.AnchorOrigin) {
		return "anchorOrigin"
	}
	if !sameJSON(origin.Meta.CanonicalID, merged.Meta.CanonicalID) {
		return "canonicalId"
	}
	return ""
}

// sameJSON compares two JSON values canonically (object members sorted, numbers as written);
// absent equals absent.
func sameJSON(a, b json.RawMessage) bool {
	ca, errA := canonical(a)
	cb, errB := canonical(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

func canonical(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// unpublishedName reports whether did is a did:orb name of a DID before anchoring (uAAA), which
// Orb does not resolve at the origin.
func unpublishedName(did string) bool {
	return strings.Contains(did, ":"+sidetree.OrbUnpublishedLabel+":")
}
