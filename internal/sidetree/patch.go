package sidetree

import (
	"net/url"
	"slices"
	"strconv"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// PatchAction names a DID state patch.
type PatchAction string

// The patch actions of the reference implementation (and ION). "ietf-json-patch" is rejected:
// ION does not support it and this package has no profile flag for it.
const (
	PatchReplace          PatchAction = "replace"
	PatchAddPublicKeys    PatchAction = "add-public-keys"
	PatchRemovePublicKeys PatchAction = "remove-public-keys"
	PatchAddServices      PatchAction = "add-services"
	PatchRemoveServices   PatchAction = "remove-services"
	// PatchAddAlsoKnownAs and PatchRemoveAlsoKnownAs are Orb's ({"action", "uris"}); only a
	// profile that lists them (OrbProfile) accepts them.
	PatchAddAlsoKnownAs    PatchAction = "add-also-known-as"
	PatchRemoveAlsoKnownAs PatchAction = "remove-also-known-as"
)

// referencePatches are the reference implementation's actions, the default; allPatches every
// action this package knows.
var (
	referencePatches = []PatchAction{PatchReplace, PatchAddPublicKeys, PatchRemovePublicKeys, PatchAddServices, PatchRemoveServices}
	allPatches       = append(referencePatches[:len(referencePatches):len(referencePatches)], PatchAddAlsoKnownAs, PatchRemoveAlsoKnownAs)
)

// Patch is one validated patch of a delta. Which fields are set depends on Action.
type Patch struct {
	Action     PatchAction
	Document   *Document   // replace
	PublicKeys []PublicKey // add-public-keys
	Services   []Service   // add-services
	IDs        []string    // remove-public-keys, remove-services
	URIs       []string    // add-also-known-as, remove-also-known-as
}

// parsePatches validates delta.patches (reference implementation validateDocumentPatches).
// Validation is all-or-nothing: one bad patch rejects the delta.
// An action the profile does not list is refused with CodeUnknownPatchAction.
func parsePatches(v *jsontree.Value, prof Profile, path string) ([]Patch, *Error) {
	if v == nil {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.Array {
		return nil, Errorf(CodeInvalidPatch, "%s must be an array, not %s", path, v.TypeName())
	}
	patches := make([]Patch, 0, len(v.Elems))
	for i := range v.Elems {
		p, err := parsePatch(&v.Elems[i], prof, path+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		patches = append(patches, p)
	}
	return patches, nil
}

func parsePatch(v *jsontree.Value, prof Profile, path string) (Patch, *Error) {
	if v.Kind != jsontree.Object {
		return Patch{}, Errorf(CodeInvalidPatch, "%s must be an object, not %s", path, v.TypeName())
	}
	action := v.Member("action")
	if action == nil {
		return Patch{}, Errorf(CodeInvalidPatch, "%s.action is required", path)
	}
	if action.Kind != jsontree.String {
		return Patch{}, Errorf(CodeUnknownPatchAction, "%s.action must be a string", path)
	}
	p := Patch{Action: PatchAction(action.Str)}
	if slices.Contains(allPatches, p.Action) && !prof.allowsPatch(p.Action) {
		// Orb's words: the action is known but this protocol does not enable it.
		return Patch{}, Errorf(CodeUnknownPatchAction, "%s.action: %s patch action is not enabled", path, jsontree.QuoteExcerpt(action.Str))
	}
	var err *Error
	switch p.Action {
	case PatchReplace:
		// The reference implementation checks only patch.document; other members of a replace
		// patch are ignored there, and so here.
		p.Document, err = parseReplaceDocument(v.Member("document"), path+".document")
	case PatchAddPublicKeys:
		if err = onlyMembers(v, []string{"action", "publicKeys"}, path); err == nil {
			p.PublicKeys, err = parsePublicKeys(v.Member("publicKeys"), path+".publicKeys")
		}
		if err == nil && prof.Orb {
			err = checkOrbKeyTypes(p.PublicKeys, path+".publicKeys")
		}
	case PatchAddServices:
		if err = onlyMembers(v, []string{"action", "services"}, path); err == nil {
			p.Services, err = parseServices(v.Member("services"), path+".services")
		}
	case PatchRemovePublicKeys, PatchRemoveServices:
		if err = onlyMembers(v, []string{"action", "ids"}, path); err == nil {
			p.IDs, err = parseIDs(v.Member("ids"), path+".ids")
		}
	case PatchAddAlsoKnownAs, PatchRemoveAlsoKnownAs:
		if err = onlyMembers(v, []string{"action", "uris"}, path); err == nil {
			p.URIs, err = parseURIs(v.Member("uris"), path+".uris")
		}
	case "ietf-json-patch":
		err = Errorf(CodeUnknownPatchAction, "%s.action %s is not supported (as in ION)", path, jsontree.QuoteExcerpt(action.Str))
	default:
		err = Errorf(CodeUnknownPatchAction, "%s.action %s is not a known patch action", path, jsontree.QuoteExcerpt(action.Str))
	}
	return p, err
}

// onlyMembers rejects members outside names; a missing one is reported by the caller.
func onlyMembers(v *jsontree.Value, names []string, path string) *Error {
	for _, m := range v.Members {
		if !contains(names, m.Name) {
			return Errorf(CodeUnknownProperty, "%s: member %s is not allowed", path, jsontree.QuoteExcerpt(m.Name))
		}
	}
	return nil
}

func parseReplaceDocument(v *jsontree.Value, path string) (*Document, *Error) {
	if v == nil {
		return nil, Errorf(CodeInvalidPatch, "%s is required", path)
	}
	// The reference implementation lets an empty array through here; a document is an object.
	if v.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidPatch, "%s must be an object, not %s", path, v.TypeName())
	}
	if err := onlyMembers(v, []string{"publicKeys", "services"}, path); err != nil {
		return nil, err
	}
	doc := &Document{}
	var err *Error
	if keys := v.Member("publicKeys"); keys != nil {
		if doc.PublicKeys, err = parsePublicKeys(keys, path+".publicKeys"); err != nil {
			return nil, err
		}
	}
	if services := v.Member("services"); services != nil {
		if doc.Services, err = parseServices(services, path+".services"); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func parseIDs(v *jsontree.Value, path string) ([]string, *Error) {
	if v == nil {
		return nil, Errorf(CodeInvalidPatch, "%s is required", path)
	}
	if v.Kind != jsontree.Array {
		return nil, Errorf(CodeInvalidPatch, "%s must be an array, not %s", path, v.TypeName())
	}
	ids := make([]string, 0, len(v.Elems))
	for i := range v.Elems {
		id, err := parseID(&v.Elems[i], CodeInvalidPatch, path+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// maxAlsoKnownAsURILength bounds one alsoKnownAs URI; the delta size bounds the rest.
const maxAlsoKnownAsURILength = 1024

// parseURIs validates the uris of an also-known-as patch as Orb's validator does: a non-empty
// array of strings that parse as URIs, none twice. Beyond Orb, each must be an absolute URI.
func parseURIs(v *jsontree.Value, path string) ([]string, *Error) {
	if v == nil {
		return nil, Errorf(CodeInvalidPatch, "%s is required", path)
	}
	if v.Kind != jsontree.Array || len(v.Elems) == 0 {
		return nil, Errorf(CodeInvalidPatch, "%s must be a non-empty array of URIs", path)
	}
	uris := make([]string, 0, len(v.Elems))
	for i := range v.Elems {
		e := &v.Elems[i]
		at := path + "[" + strconv.Itoa(i) + "]"
		if e.Kind != jsontree.String || e.Str == "" || len(e.Str) > maxAlsoKnownAsURILength {
			return nil, Errorf(CodeInvalidPatch, "%s must be a URI string of 1 to %d bytes", at, maxAlsoKnownAsURILength)
		}
		if u, err := url.Parse(e.Str); err != nil || u.Scheme == "" {
			return nil, Errorf(CodeInvalidPatch, "%s must be an absolute URI", at)
		}
		if slices.Contains(uris, e.Str) {
			return nil, Errorf(CodeInvalidPatch, "%s: duplicate uri %s", at, jsontree.QuoteExcerpt(e.Str))
		}
		uris = append(uris, e.Str)
	}
	return uris, nil
}

// checkOrbKeyTypes applies Orb's document validator: a key's type must be one Orb can render,
// and a key agreement key may not be a signature-only type, a verification key may not be an
// X25519 key.
func checkOrbKeyTypes(keys []PublicKey, path string) *Error {
	for i, k := range keys {
		at := path + "[" + strconv.Itoa(i) + "]"
		if _, ok := orbKeyContexts[k.Type]; !ok {
			return Errorf(CodeInvalidPublicKey, "%s: key type %s is not supported", at, jsontree.QuoteExcerpt(k.Type))
		}
		for _, purpose := range k.Purposes {
			agreementOnly := k.Type == "X25519KeyAgreementKey2019"
			signatureOnly := k.Type == "Ed25519VerificationKey2018" || k.Type == "Ed25519VerificationKey2020"
			if (purpose == "keyAgreement" && signatureOnly) || (purpose != "keyAgreement" && agreementOnly) {
				return Errorf(CodeInvalidPublicKey, "%s: key type %s is not allowed for purpose %s", at, k.Type, purpose)
			}
		}
	}
	return nil
}
