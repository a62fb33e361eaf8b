package activity

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/fxamacker/cbor/v2"
)

// Hashlink encoding, as Orb writes it: "hl:" + multibase base64url ("u", no padding) of the
// sha2-256 multihash of the content, then optionally ":" + the same multibase of a CBOR map
// whose key 0x0f holds the links where the content may be fetched.
const (
	hashlinkPrefix   = "hl:"
	multibaseBase64  = 'u'
	mhSHA256         = 0x12
	mhSHA256Length   = 32
	metadataLinksKey = 0x0f
	// MaxHashlinkLinks bounds the links a hashlink's metadata may carry (Orb writes one to
	// three: CAS, IPFS, WebFinger).
	MaxHashlinkLinks = 64
)

var b64url = base64.RawURLEncoding.Strict()

// Hashlink is a parsed hashlink.
type Hashlink struct {
	// Digest is the sha2-256 digest of the content (32 bytes).
	Digest []byte
	// Links are the metadata's links, nil when the hashlink has no metadata.
	Links []string
}

// NewHashlink returns the hashlink of content with the given links in its metadata (none: no
// metadata).
func NewHashlink(content []byte, links ...string) string {
	sum := sha256.Sum256(content)
	return Hashlink{Digest: sum[:], Links: links}.String()
}

// String writes the hashlink.
func (h Hashlink) String() string {
	s := hashlinkPrefix + h.ResourceHash()
	if len(h.Links) > 0 {
		// Encoding a map of an integer to strings cannot fail.
		meta, _ := cbor.Marshal(map[int][]string{metadataLinksKey: h.Links})
		s += ":" + string(multibaseBase64) + b64url.EncodeToString(meta)
	}
	return s
}

// ResourceHash is the multibase multihash part, "uEiB…", the form Orb compares and uses as a
// CAS key.
func (h Hashlink) ResourceHash() string {
	mh := append([]byte{mhSHA256, mhSHA256Length}, h.Digest...)
	return string(multibaseBase64) + b64url.EncodeToString(mh)
}

// Anchor is the hashlink without metadata, "hl:uEiB…": the form an anchor linkset's anchor and an
// item's previous take, since metadata (where to fetch) is not part of the content's identity.
func (h Hashlink) Anchor() string { return hashlinkPrefix + h.ResourceHash() }

// Verify checks that content hashes to h.
func (h Hashlink) Verify(content []byte) error {
	sum := sha256.Sum256(content)
	if !bytes.Equal(sum[:], h.Digest) {
		return invalid("content hash %s does not match hashlink %s", Hashlink{Digest: sum[:]}.ResourceHash(), h.ResourceHash())
	}
	return nil
}

// ParseHashlink reads "hl:<multihash>[:<metadata>]". Only sha2-256 with a full digest is accepted,
// in canonical base64url; metadata must be a CBOR map whose key 0x0f is an array of strings
// (other integer keys are ignored, as Orb ignores them).
func ParseHashlink(s string) (Hashlink, error) {
	if len(s) > MaxIRILength {
		return Hashlink{}, tooLarge("hashlink of %d bytes, more than %d", len(s), MaxIRILength)
	}
	rest, ok := strings.CutPrefix(s, hashlinkPrefix)
	if !ok {
		return Hashlink{}, invalid("hashlink %q must start with %q", s, hashlinkPrefix)
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 2 {
		return Hashlink{}, invalid("hashlink %q has more than 3 parts", s)
	}
	mh, err := decodeMultibase(parts[0])
	if err != nil {
		return Hashlink{}, invalid("hashlink %q resource hash: %v", s, err)
	}
	if len(mh) != 2+mhSHA256Length || mh[0] != mhSHA256 || mh[1] != mhSHA256Length {
		return Hashlink{}, invalid("hashlink %q resource hash is not a sha2-256 multihash", s)
	}
	h := Hashlink{Digest: mh[2:]}
	if len(parts) == 2 {
		h.Links, err = decodeHashlinkMetadata(parts[1])
		if err != nil {
			return Hashlink{}, invalid("hashlink %q metadata: %v", s, err)
		}
	}
	return h, nil
}

func decodeMultibase(s string) ([]byte, error) {
	if s == "" || s[0] != multibaseBase64 {
		return nil, fmt.Errorf("want multibase base64url (prefix %q)", multibaseBase64)
	}
	return b64url.DecodeString(s[1:])
}

func decodeHashlinkMetadata(s string) ([]string, error) {
	raw, err := decodeMultibase(s)
	if err != nil {
		return nil, err
	}
	dm, err := cbor.DecOptions{
		MaxNestedLevels:  8,
		MaxArrayElements: MaxHashlinkLinks,
		MaxMapPairs:      MaxHashlinkLinks,
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
	}.DecMode()
	if err != nil {
		return nil, fmt.Errorf("cbor decoder: %w", err)
	}
	var meta map[int]cbor.RawMessage
	if err := dm.Unmarshal(raw, &meta); err != nil {
		return nil, fmt.Errorf("cbor: %w", err)
	}
	linksRaw, ok := meta[metadataLinksKey]
	if !ok {
		return nil, fmt.Errorf("no links (key %#x)", metadataLinksKey)
	}
	var links []string
	if err := dm.Unmarshal(linksRaw, &links); err != nil {
		return nil, fmt.Errorf("links: %w", err)
	}
	if len(links) == 0 {
		return nil, fmt.Errorf("empty links")
	}
	return links, nil
}
