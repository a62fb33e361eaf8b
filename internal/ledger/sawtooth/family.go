package sawtooth

import (
	"crypto/sha512"
	"encoding/hex"
)

// The anchord transaction family. Its payload is the anchor string itself as UTF-8 bytes
// (e.g. "42.QmXyz…"), with no further encoding: a processor reads the whole payload as the
// anchor. Each transaction reads and writes exactly one state address, AnchorAddress of the
// anchor.
const (
	FamilyName    = "anchord"
	FamilyVersion = "1.0"
)

// AddressLen is the length of a Sawtooth state address in hex characters: a 6-character
// namespace prefix and 64 characters chosen by the family.
const AddressLen = 70

// Namespace returns a family's namespace prefix, by the usual Sawtooth convention the first 6
// hex characters of SHA-512(family name). For "anchord" it is Namespace(FamilyName).
func Namespace(familyName string) string {
	sum := sha512.Sum512([]byte(familyName))
	return hex.EncodeToString(sum[:3])
}

// AnchorAddress returns the state address of an anchor: the family namespace followed by the
// first 64 hex characters (32 bytes) of SHA-512(anchor). Two anchors share an address only if
// their SHA-512 digests share 32 leading bytes.
func AnchorAddress(familyName, anchor string) string {
	sum := sha512.Sum512([]byte(anchor))
	return Namespace(familyName) + hex.EncodeToString(sum[:32])
}
