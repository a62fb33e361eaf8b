package sidetree

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Algorithm is a JWS "alg" value accepted for update and recovery keys.
type Algorithm string

// Supported signature algorithms. ES256K (secp256k1) is Sidetree's and ION's; EdDSA (Ed25519)
// is an opt-in profile option.
const (
	ES256K Algorithm = "ES256K"
	EdDSA  Algorithm = "EdDSA"
)

// Profile defaults.
const (
	MethodDefault       = "sidetree"
	MaxDeltaSizeDefault = 1000
	// MaxOperationsPerDIDDefault bounds a DID's anchored history. Resolving costs about one
	// signature verification per operation, and a DID is resolved afresh after each of its
	// operations is anchored; 1,000 is years of daily key rotation.
	MaxOperationsPerDIDDefault = 1000
	// MaxDocumentBytesDefault bounds the rendered resolution result of a DID (short form): room
	// for well over a hundred keys and services.
	MaxDocumentBytesDefault = 64 << 10
)

// Profile holds the method-specific parameters of validation. The zero value means the
// defaults (DefaultProfile).
type Profile struct {
	// Method is the DID method name as it appears after "did:", possibly with a network
	// segment: "sidetree", "ion", "ion:test". Default "sidetree".
	Method string
	// Algorithms are the JWS algorithms accepted for update and recovery keys. Default
	// [ES256K]. Add EdDSA to also accept Ed25519 keys ({"kty":"OKP","crv":"Ed25519","x"}).
	Algorithms []Algorithm
	// MaxDeltaSize bounds len(JCS(delta)) in bytes (MAX_DELTA_SIZE). Default 1000.
	MaxDeltaSize int
	// MaxOperationsPerDID and MaxDocumentBytes bound what one DID can grow to; intake refuses
	// an operation that would exceed them ((*State).CheckLimits). Resolution does not apply
	// them: an anchored history resolves as the reference implementation resolves it.
	MaxOperationsPerDID int
	MaxDocumentBytes    int
	// OrbBatchFiles selects did:orb's batch file layout (Orb's, from sidetree-core-go) over the
	// reference implementation's: a file names another by a hashlink that carries a link to the
	// file in the writer's CAS (an Orb domain fetches another domain's file only through such a
	// link), not by a bare CID; and a proof file lists the signedData JWS strings themselves,
	// not {"signedData"} objects. Readers then take proofs only in that form, as Orb does.
	OrbBatchFiles bool
}

// DefaultProfile returns the ION-compatible profile with method name "sidetree".
func DefaultProfile() Profile {
	return Profile{
		Method: MethodDefault, Algorithms: []Algorithm{ES256K}, MaxDeltaSize: MaxDeltaSizeDefault,
		MaxOperationsPerDID: MaxOperationsPerDIDDefault, MaxDocumentBytes: MaxDocumentBytesDefault,
	}
}

// Validate reports a profile that cannot work: a malformed method name or an unknown algorithm.
func (p Profile) Validate() error {
	for seg := range strings.SplitSeq(p.method(), ":") {
		if seg == "" || strings.ContainsFunc(seg, func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9')
		}) {
			return fmt.Errorf("sidetree profile: method %q: segments must be non-empty [a-z0-9]", p.Method)
		}
	}
	for _, a := range p.Algorithms {
		if a != ES256K && a != EdDSA {
			return fmt.Errorf("sidetree profile: unsupported algorithm %q", a)
		}
	}
	if p.MaxDeltaSize < 0 {
		return fmt.Errorf("sidetree profile: negative MaxDeltaSize %d", p.MaxDeltaSize)
	}
	if p.MaxOperationsPerDID < 0 {
		return fmt.Errorf("sidetree profile: negative MaxOperationsPerDID %d", p.MaxOperationsPerDID)
	}
	if p.MaxDocumentBytes < 0 {
		return fmt.Errorf("sidetree profile: negative MaxDocumentBytes %d", p.MaxDocumentBytes)
	}
	return nil
}

func (p Profile) method() string { return cmp.Or(p.Method, MethodDefault) }

func (p Profile) maxDeltaSize() int { return cmp.Or(p.MaxDeltaSize, MaxDeltaSizeDefault) }

func (p Profile) maxOperationsPerDID() int {
	return cmp.Or(p.MaxOperationsPerDID, MaxOperationsPerDIDDefault)
}

func (p Profile) maxDocumentBytes() int { return cmp.Or(p.MaxDocumentBytes, MaxDocumentBytesDefault) }

func (p Profile) allows(a Algorithm) bool {
	if len(p.Algorithms) == 0 {
		return a == ES256K
	}
	return slices.Contains(p.Algorithms, a)
}

func (p Profile) algorithmList() string {
	if len(p.Algorithms) == 0 {
		return string(ES256K)
	}
	parts := make([]string, len(p.Algorithms))
	for i, a := range p.Algorithms {
		parts[i] = string(a)
	}
	return strings.Join(parts, ", ")
}
