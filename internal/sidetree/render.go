package sidetree

import (
	"time"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// ResolutionStatus tells the HTTP layer which status a resolution result gets.
type ResolutionStatus int

const (
	// ResolutionFound: 200 with the rendered result.
	ResolutionFound ResolutionStatus = iota
	// ResolutionDeactivated: 410 with the rendered (deactivated) result.
	ResolutionDeactivated
	// ResolutionNotFound: 404; there is no body.
	ResolutionNotFound
)

const (
	resolutionContext  = "https://w3id.org/did-resolution/v1"
	didDocumentContext = "https://www.w3.org/ns/did/v1"
)

// RenderResolution renders the DID resolution result of the reference implementation's
// DocumentComposer for did, given the state Resolve computed (nil when nothing is anchored). An
// unanchored long-form DID resolves to its embedded create, unpublished. The member order follows
// the DIF vector files (resolution/*.json), which differ from JSON.stringify's order only inside
// didDocumentMetadata.
func RenderResolution(did *DID, st *State) ([]byte, ResolutionStatus) {
	return RenderResolutionWithMetadata(did, st, Metadata{})
}

// Metadata is the DID document metadata that DID Resolution defines beyond the reference
// implementation's result: when the DID was created and last changed, and which version this is.
// Zero fields are left out, so the zero Metadata renders exactly the reference implementation's
// result.
type Metadata struct {
	// Created and Updated are the times of the anchors of the create and of the last operation
	// applied after it (Updated is zero when nothing was).
	Created, Updated time.Time
	// VersionID identifies the version: the anchor of the last operation applied.
	VersionID string
	// NextUpdate and NextVersionID describe the version after this one, when this one is not the
	// latest.
	NextUpdate    time.Time
	NextVersionID string
	// CanonicalRef and EquivalentRefs name a published did:orb DID (DID parsed under Orb's
	// names): the anchor hash of the anchor of its last operation, and that anchor's hashlink
	// with its metadata. They give canonicalId did:orb:<CanonicalRef>:<suffix> and equivalentId
	// [canonicalId, did:orb:<each EquivalentRef>:<suffix>], as Orb's resolver does. Empty: no
	// canonical name is known yet (the anchor has no hashlink yet) and neither is written.
	CanonicalRef   string
	EquivalentRefs []string
	// UnpublishedOps and PublishedOps are the DID's operations as Orb lists them in a did:orb
	// result's method metadata (unpublishedOperations, publishedOperations), for a domain that
	// resolves the DID from its anchor origin; empty lists are not written. Other profiles
	// ignore them.
	UnpublishedOps []OrbUnpublishedOperation
	PublishedOps   []OrbPublishedOperation
}

// RenderResolutionWithMetadata is RenderResolution with m's members added to
// didDocumentMetadata.
func RenderResolutionWithMetadata(did *DID, st *State, m Metadata) ([]byte, ResolutionStatus) {
	return appendResolution(nil, did, st, m)
}

// AppendResolution is RenderResolution appending the result to b: a caller that keeps a copy of
// the result anyway (the resolver's cache) renders into a buffer it reuses. b is returned as it
// was when the status is ResolutionNotFound.
func AppendResolution(b []byte, did *DID, st *State) ([]byte, ResolutionStatus) {
	return appendResolution(b, did, st, Metadata{})
}

func appendResolution(b []byte, did *DID, st *State, m Metadata) ([]byte, ResolutionStatus) {
	if st == nil {
		// InitialState is nil for a short form (no embedded create): not found.
		if st = InitialState(did.Create); st == nil {
			return b, ResolutionNotFound
		}
	}
	if did.orb != nil {
		status := ResolutionFound
		if st.Deactivated {
			status = ResolutionDeactivated
		}
		if b == nil {
			return renderOrbResult(did, st, m), status
		}
		return append(b, renderOrbResult(did, st, m)...), status
	}
	if st.Deactivated {
		return appendDeactivated(b, did.ShortForm(), did.ShortForm(), st.Published, m), ResolutionDeactivated
	}
	return appendDocument(b, did, st, m), ResolutionFound
}

// RenderCreateResponse renders the body of a successful create request: the resolution result
// of the would-be DID in short form, unpublished (reference implementation handleCreateRequest).
//
// Under did:orb's names the DID is did:orb:uAAA:<suffix>, with the domain's equivalent name,
// as Orb answers a create.
func RenderCreateResponse(p Profile, create *Operation) []byte {
	did := &DID{Method: p.method(), Suffix: create.Suffix}
	if p.Orb {
		did.orb = &orbName{domain: p.Domain}
		return renderOrbResult(did, InitialState(create), Metadata{})
	}
	return renderDocument(did, InitialState(create), Metadata{})
}

// appendDeactivated appends the result of a deactivated DID to b (nil: to a new buffer).
func appendDeactivated(b []byte, id, canonical string, published bool, m Metadata) []byte {
	if b == nil {
		b = make([]byte, 0, 320)
	}
	b = append(b, `{"@context":`...)
	b = jsontree.AppendQuoted(b, resolutionContext)
	b = append(b, `,"didDocument":`...)
	b = appendDocumentHead(b, id)
	b = append(b, `},"didDocumentMetadata":{"deactivated":true,"method":{"published":`...)
	b = appendBool(b, published)
	b = append(b, '}')
	if canonical != "" {
		b = append(b, `,"canonicalId":`...)
		b = jsontree.AppendQuoted(b, canonical)
	}
	b = appendMetadata(b, m)
	return append(b, "}}"...)
}

// appendMetadata writes m's non-zero members, each preceded by a comma. Times are XML datetimes
// in UTC without fractions of a second, as DID Core requires of created and updated.
func appendMetadata(b []byte, m Metadata) []byte {
	for _, t := range []struct {
		name string
		v    time.Time
	}{{"created", m.Created}, {"updated", m.Updated}} {
		if !t.v.IsZero() {
			b = append(b, ',')
			b = jsontree.AppendQuoted(b, t.name)
			b = append(b, ':')
			b = jsontree.AppendQuoted(b, FormatTime(t.v))
		}
	}
	if m.VersionID != "" {
		b = append(b, `,"versionId":`...)
		b = jsontree.AppendQuoted(b, m.VersionID)
	}
	if !m.NextUpdate.IsZero() {
		b = append(b, `,"nextUpdate":`...)
		b = jsontree.AppendQuoted(b, FormatTime(m.NextUpdate))
	}
	if m.NextVersionID != "" {
		b = append(b, `,"nextVersionId":`...)
		b = jsontree.AppendQuoted(b, m.NextVersionID)
	}
	return b
}

// FormatTime renders a metadata time: UTC, whole seconds (2006-01-02T15:04:05Z).
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

func renderDocument(did *DID, st *State, m Metadata) []byte {
	return appendDocument(nil, did, st, m)
}

// appendDocument appends renderDocument's result to b (nil: to a new buffer).
func appendDocument(b []byte, did *DID, st *State, m Metadata) []byte {
	id := did.renderID(st)
	doc := &st.Document
	if b == nil {
		b = make([]byte, 0, 1024+4*len(id))
	}
	b = append(b, `{"@context":`...)
	b = jsontree.AppendQuoted(b, resolutionContext)
	b = append(b, `,"didDocument":`...)
	b = appendDocumentHead(b, id)

	if len(doc.AlsoKnownAs) > 0 {
		b = append(b, `,"alsoKnownAs":[`...)
		for i, u := range doc.AlsoKnownAs {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontree.AppendQuoted(b, u)
		}
		b = append(b, ']')
	}
	if doc.Services != nil {
		b = append(b, `,"service":[`...)
		for i, s := range doc.Services {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsontree.AppendQuoted(b, "#"+s.ID)
			b = append(b, `,"type":`...)
			b = jsontree.AppendQuoted(b, s.Type)
			b = append(b, `,"serviceEndpoint":`...)
			b = append(b, s.Endpoint...)
			b = append(b, '}')
		}
		b = append(b, ']')
	}

	if len(doc.PublicKeys) > 0 {
		b = append(b, `,"verificationMethod":[`...)
		for i, k := range doc.PublicKeys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsontree.AppendQuoted(b, "#"+k.ID)
			b = append(b, `,"controller":`...)
			b = jsontree.AppendQuoted(b, id)
			b = append(b, `,"type":`...)
			b = jsontree.AppendQuoted(b, k.Type)
			b = append(b, `,"publicKeyJwk":`...)
			b = append(b, k.JWK...)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendRelationships(b, doc.PublicKeys)

	b = append(b, `},"didDocumentMetadata":{`...)
	short := id
	if did.orb != nil || did.IsLongForm() {
		short = did.ShortForm()
	}
	switch {
	case !did.IsLongForm():
		b = append(b, `"canonicalId":`...)
		b = jsontree.AppendQuoted(b, short)
		b = append(b, ',')
	case st.Published:
		b = append(b, `"canonicalId":`...)
		b = jsontree.AppendQuoted(b, short)
		b = append(b, `,"equivalentId":[`...)
		b = jsontree.AppendQuoted(b, short)
		b = append(b, "],"...)
	default:
		b = append(b, `"equivalentId":[`...)
		b = jsontree.AppendQuoted(b, short)
		b = append(b, "],"...)
	}
	b = append(b, `"method":{"published":`...)
	b = appendBool(b, st.Published)
	b = append(b, `,"recoveryCommitment":`...)
	b = jsontree.AppendQuoted(b, st.RecoveryCommitment)
	if st.UpdateCommitment != "" {
		b = append(b, `,"updateCommitment":`...)
		b = jsontree.AppendQuoted(b, st.UpdateCommitment)
	}
	if origin := st.Origin(); origin != "" {
		b = append(b, `,"anchorOrigin":`...)
		b = jsontree.AppendQuoted(b, origin)
	}
	b = append(b, '}')
	b = appendMetadata(b, m)
	return append(b, "}}"...)
}

// appendDocumentHead writes {"id":id,"@context":[…,{"@base":id}] without closing the object.
func appendDocumentHead(b []byte, id string) []byte {
	b = append(b, `{"id":`...)
	b = jsontree.AppendQuoted(b, id)
	b = append(b, `,"@context":[`...)
	b = jsontree.AppendQuoted(b, didDocumentContext)
	b = append(b, `,{"@base":`...)
	b = jsontree.AppendQuoted(b, id)
	return append(b, "}]"...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendRelationships writes the verification relationships of keys, each preceded by a comma,
// in the order their purposes are first seen (a Map in the reference implementation), each
// listing the keys that serve it in the keys' order. Keys serve few distinct purposes (five are
// defined), so each is looked for again in every key rather than collected: a resolution that
// misses the cache allocates nothing for them.
func appendRelationships(b []byte, keys []PublicKey) []byte {
	var seen [8]string
	purposes := seen[:0]
	for _, k := range keys {
		for _, purpose := range k.Purposes {
			if indexOf(purposes, purpose) >= 0 {
				continue
			}
			purposes = append(purposes, purpose)
			b = append(b, ',')
			b = jsontree.AppendQuoted(b, purpose)
			b = append(b, ":["...)
			first := true
			for _, r := range keys {
				for _, q := range r.Purposes {
					if q != purpose {
						continue
					}
					if !first {
						b = append(b, ',')
					}
					first = false
					b = jsontree.AppendQuoted(b, "#"+r.ID)
				}
			}
			b = append(b, ']')
		}
	}
	return b
}

func indexOf(list []string, s string) int {
	for i, e := range list {
		if e == s {
			return i
		}
	}
	return -1
}
