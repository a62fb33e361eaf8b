package sidetree

import (
	"encoding/base32"
	"encoding/binary"
	"strings"

	"github.com/mr-tron/base58"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// did:orb names (Profile.Orb). Orb resolves a DID by its suffix, the last ':'-separated part,
// whatever comes between the method and the suffix; what comes there names an anchor that must
// be the DID's latest or one of its ancestors (Orb's verifyCID, done by the resolver, which
// knows the anchors). The forms Orb gives out and resolves:
//
//	did:orb:<anchor hash>:<suffix>              canonical: the anchor of the DID's last operation
//	did:orb:uAAA:<suffix>                       before anchoring (Orb's unpublished label)
//	did:orb:hl:<anchor hash>[:<metadata>]:<suffix>   the anchor's hashlink, as equivalentId lists it
//	did:orb:https:<domain>:<anchor hash | uAAA>:<suffix>   a domain hint (http: for a plain-HTTP domain)
//	did:orb:ipfs:<CID>:<suffix>                 the anchor by its IPFS CID
//	<any of these>:<base64url(JCS({delta, suffixData}))>   long form
//
// An anchor hash is Orb's CID: "u" + base64url of the sha2-256 multihash of the anchor's
// content, the resource hash of its hashlink. An IPFS CID (v0 base58 or v1 base32) names the
// same anchor when it carries the same multihash. anchord also accepts did:orb:<suffix>, which
// names no anchor.
const (
	// OrbUnpublishedLabel stands where the anchor hash goes in a DID not yet anchored.
	OrbUnpublishedLabel = "uAAA"
	// maxOrbNameLength bounds the part of a did:orb DID before a long form's initial state.
	maxOrbNameLength = 2048
)

// orbName is what a did:orb DID says besides its suffix.
type orbName struct {
	// given is the DID without a long form's initial state: what Orb answers as the id.
	given string
	// anchor is the anchor hash the DID names ("u" + base64url multihash); "" when it names
	// none (uAAA, or no hint at all).
	anchor string
	// domain is the profile's Domain, for the names of an unpublished DID.
	domain string
}

// AnchorHash returns the anchor hash (Orb's CID) a did:orb DID names, "" when it names none.
func (d *DID) AnchorHash() string {
	if d.orb == nil {
		return ""
	}
	return d.orb.anchor
}

// Name returns the DID as given, without a long form's initial state: under did:orb's names
// the hint stays (did:orb:https:<domain>:<hash>:<suffix>), elsewhere it is the short form.
func (d *DID) Name() string {
	if d.orb != nil && d.orb.given != "" {
		return d.orb.given
	}
	return d.ShortForm()
}

// IsOrb reports whether the DID was parsed under did:orb's names.
func (d *DID) IsOrb() bool { return d.orb != nil }

// OrbAnchorHash returns the anchor hash (Orb's CID) of a hashlink "hl:<resource hash>[:…]",
// or "" when s is not one.
func OrbAnchorHash(hashlink string) string {
	rest, ok := strings.CutPrefix(hashlink, "hl:")
	if !ok {
		return ""
	}
	hash, _, _ := strings.Cut(rest, ":")
	if !isAnchorHash(hash) {
		return ""
	}
	return hash
}

// parseOrbDID parses a did:orb DID (see the forms above).
func parseOrbDID(p Profile, did string) (*DID, error) {
	prefix := "did:" + OrbMethod + ":"
	rest, ok := strings.CutPrefix(did, prefix)
	if !ok {
		if strings.HasPrefix(did, "did:") {
			return nil, Errorf(CodeInvalidDID, "not a DID of the configured method %q: it must start with %q", OrbMethod, prefix)
		}
		return nil, Errorf(CodeInvalidDID, "DID must start with %q", prefix)
	}
	d := &DID{Method: OrbMethod}
	name, encoded := did, ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && isEncodedJSONObject(rest[i+1:]) {
		name, encoded, d.LongForm = prefix+rest[:i], rest[i+1:], did
		rest = rest[:i]
	}
	if len(name) > maxOrbNameLength {
		return nil, Errorf(CodeInvalidDID, "DID is longer than %d characters before its initial state", maxOrbNameLength)
	}
	hint := ""
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		hint, d.Suffix = rest[:i], rest[i+1:]
	} else {
		d.Suffix = rest
	}
	if _, err := DecodeMultihash(d.Suffix); err != nil {
		return nil, Wrap(CodeInvalidDID, err, "DID suffix %s", jsontree.QuoteExcerpt(d.Suffix))
	}
	anchor, err := parseOrbHint(hint)
	if err != nil {
		return nil, err
	}
	d.orb = &orbName{given: name, anchor: anchor, domain: p.Domain}
	if encoded == "" {
		return d, nil
	}
	create, perr := parseInitialState(encoded, p)
	if perr != nil {
		return nil, perr
	}
	if create.Suffix != d.Suffix {
		return nil, Errorf(CodeInvalidLongFormDID, "initial state hashes to suffix %s, not %s", create.Suffix, d.Suffix)
	}
	d.Create = create
	return d, nil
}

// parseOrbHint reads what stands between "did:orb:" and the suffix and returns the anchor hash
// it names ("" for none).
func parseOrbHint(hint string) (string, *Error) {
	invalid := func(why string) *Error {
		return Errorf(CodeInvalidDID, "did:orb %s %s", why, jsontree.QuoteExcerpt(hint))
	}
	switch {
	case hint == "", hint == OrbUnpublishedLabel:
		return "", nil
	case strings.HasPrefix(hint, "hl:"):
		parts := strings.Split(hint, ":")
		if len(parts) > 3 || !isAnchorHash(parts[1]) {
			return "", invalid("hashlink hint is not hl:<sha2-256 resource hash>[:<metadata>]:")
		}
		if len(parts) == 3 && (len(parts[2]) < 2 || parts[2][0] != 'u' || !isBase64URL(parts[2][1:])) {
			return "", invalid("hashlink metadata is not multibase base64url:")
		}
		return parts[1], nil
	case strings.HasPrefix(hint, "https:"), strings.HasPrefix(hint, "http:"):
		_, rest, _ := strings.Cut(hint, ":")
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 || !isDomain(rest[:i]) {
			return "", invalid("domain hint is not <scheme>:<domain>:<anchor hash>:")
		}
		return parseOrbHint(rest[i+1:])
	case strings.HasPrefix(hint, "ipfs:"):
		anchor, ok := anchorHashOfCID(strings.TrimPrefix(hint, "ipfs:"))
		if !ok {
			return "", invalid("IPFS hint is not ipfs:<CID of a sha2-256 multihash>:")
		}
		return anchor, nil
	case isAnchorHash(hint):
		return hint, nil
	}
	return "", invalid("names no anchor:")
}

// isAnchorHash reports whether s is "u" + canonical base64url of a sha2-256 multihash.
func isAnchorHash(s string) bool {
	if len(s) < 2 || s[0] != 'u' {
		return false
	}
	_, err := DecodeMultihash(s[1:])
	return err == nil
}

// isDomain accepts a host with an optional port: letters, digits, '.', '-', and one ':'.
func isDomain(s string) bool {
	if s == "" || strings.Count(s, ":") > 1 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '.' && r != '-' && r != ':' {
			return false
		}
	}
	return true
}

// anchorHashOfCID returns the anchor hash of the multihash inside an IPFS CID: v0 ("Qm…",
// base58btc of the multihash itself) or v1 in base32 ("b…": version 1, a codec, the
// multihash). Only sha2-256 multihashes name anchors.
func anchorHashOfCID(cid string) (string, bool) {
	var mh []byte
	switch {
	case len(cid) == 46 && strings.HasPrefix(cid, "Qm"):
		raw, err := base58.Decode(cid)
		if err != nil {
			return "", false
		}
		mh = raw
	case len(cid) > 1 && cid[0] == 'b':
		raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(strings.ToUpper(cid[1:]))
		if err != nil {
			return "", false
		}
		version, n := binary.Uvarint(raw)
		if n <= 0 || version != 1 {
			return "", false
		}
		_, m := binary.Uvarint(raw[n:]) // the content's codec: any
		if m <= 0 {
			return "", false
		}
		mh = raw[n+m:]
	default:
		return "", false
	}
	if len(mh) != 2+sha256Size || mh[0] != 0x12 || mh[1] != sha256Size {
		return "", false
	}
	return "u" + encodeBase64URL(mh), true
}

// isEncodedJSONObject reports whether s is base64url of a JSON object, as Orb tells a long
// form's initial state from a suffix.
func isEncodedJSONObject(s string) bool {
	if len(s) < 4 || s[0] != 'e' { // base64url of '{' begins with 'e'
		return false
	}
	raw, err := decodeBase64URL(s)
	if err != nil {
		return false
	}
	v, err := jsontree.Parse(raw)
	return err == nil && v.Kind == jsontree.Object
}

// renderID is the id a resolution result gives the DID: as given, except that Orb names an
// unpublished DID by its unpublished label (keeping a long form's initial state).
func (d *DID) renderID(st *State) string {
	if d.orb == nil {
		return d.String()
	}
	if st != nil && st.Published {
		if d.orb.given == "" {
			return d.ShortForm()
		}
		return d.orb.given
	}
	id := d.orbUnpublished()
	if d.LongForm != "" {
		id += d.LongForm[strings.LastIndexByte(d.LongForm, ':'):]
	}
	return id
}

func (d *DID) orbUnpublished() string {
	return "did:" + OrbMethod + ":" + OrbUnpublishedLabel + ":" + d.Suffix
}

// orbCanonical is did:orb:<anchor hash>:<suffix>, or "" while no anchor hash is known.
func (d *DID) orbCanonical(m Metadata) string {
	if m.CanonicalRef == "" {
		return ""
	}
	return "did:" + OrbMethod + ":" + m.CanonicalRef + ":" + d.Suffix
}

// orbNames returns canonicalId and equivalentId as Orb's resolver gives them (sidetree-go's
// GetTransformationInfoForPublished and …ForUnpublished). Published: the canonical name and the
// hashlink names. Unpublished: the unpublished name (for a long form) and the domain's name of
// it.
func (d *DID) orbNames(st *State, m Metadata) (canonical string, equivalent []string) {
	if st.Published {
		canonical = d.orbCanonical(m)
		if canonical == "" {
			return "", nil
		}
		equivalent = append(equivalent, canonical)
		for _, ref := range m.EquivalentRefs {
			equivalent = append(equivalent, "did:"+OrbMethod+":"+ref+":"+d.Suffix)
		}
		return canonical, equivalent
	}
	if d.LongForm != "" {
		equivalent = append(equivalent, d.orbUnpublished())
	}
	if d.orb.domain != "" {
		equivalent = append(equivalent, "did:"+OrbMethod+":"+d.orb.domain+":"+OrbUnpublishedLabel+":"+d.Suffix)
	}
	return "", equivalent
}
