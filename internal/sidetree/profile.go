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
// is an opt-in profile option; ES256 is did:orb's (OrbProfile), where it names P-256 and P-384
// signatures alike, as Orb's clients send them.
const (
	ES256K Algorithm = "ES256K"
	EdDSA  Algorithm = "EdDSA"
	ES256  Algorithm = "ES256"
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

	// Orb selects did:orb's rules (OrbProfile): Orb's JWKs and JWS headers, patches, anchor
	// times, a required anchorOrigin, and its DID names (see names.go). False: the reference
	// implementation's rules, unchanged.
	Orb bool
	// MaxOperationSize bounds an operation request in bytes as received (Orb's
	// MaxOperationSize); 0: no bound beyond the HTTP body limit.
	MaxOperationSize int
	// Patches lists the patch actions accepted; empty: the reference implementation's five
	// (replace, add/remove-public-keys, add/remove-services).
	Patches []PatchAction
	// Domain is this domain as Orb writes it into the names of unpublished DIDs
	// ("https:<host>", "http:<host>" for a plain-HTTP domain); "" leaves those names out.
	Domain string
}

// Orb's protocol v1.0 parameters (Orb pkg/protocolversion/versions/v1_0/config).
const (
	OrbMethod           = "orb"
	OrbMaxOperationSize = 2500
	OrbMaxDeltaSize     = 1700
	// OrbMaxCASURILength bounds a reference inside Orb's batch files (MaxCasURILength).
	OrbMaxCASURILength = 500
	// OrbAnchorWindow is how long an operation that states only anchorFrom stays valid: Orb's
	// parser takes its MaxDeltaSize (1,700) as seconds there.
	OrbAnchorWindow = OrbMaxDeltaSize
)

// OrbPatches are the patch actions Orb's v1.0 protocol accepts: no replace.
var OrbPatches = []PatchAction{
	PatchAddPublicKeys, PatchRemovePublicKeys, PatchAddServices, PatchRemoveServices,
	PatchAddAlsoKnownAs, PatchRemoveAlsoKnownAs,
}

// OrbProfile returns did:orb's profile: Orb's protocol v1.0 parameters (operations of at most
// 2,500 bytes, deltas of 1,700; signature algorithms EdDSA, ES256, ES256K over Ed25519, P-256,
// P-384 and secp256k1 keys; the six add/remove patches) and its names. domain is as in
// Profile.Domain.
func OrbProfile(domain string) Profile {
	return Profile{
		Method: OrbMethod, Algorithms: []Algorithm{EdDSA, ES256, ES256K}, MaxDeltaSize: OrbMaxDeltaSize,
		MaxOperationsPerDID: MaxOperationsPerDIDDefault, MaxDocumentBytes: MaxDocumentBytesDefault,
		Orb: true, MaxOperationSize: OrbMaxOperationSize, Patches: OrbPatches, Domain: domain,
		OrbBatchFiles: true,
	}
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
		switch {
		case a == ES256 && !p.Orb:
			return fmt.Errorf("sidetree profile: algorithm %q is did:orb's: it needs --did-method orb", a)
		case a != ES256K && a != EdDSA && a != ES256:
			return fmt.Errorf("sidetree profile: unsupported algorithm %q", a)
		}
	}
	for _, a := range p.Patches {
		if !slices.Contains(allPatches, a) {
			return fmt.Errorf("sidetree profile: unknown patch action %q", a)
		}
	}
	if p.Orb && p.method() != OrbMethod {
		return fmt.Errorf("sidetree profile: did:orb rules need the method %q, not %q", OrbMethod, p.Method)
	}
	if p.MaxOperationSize < 0 {
		return fmt.Errorf("sidetree profile: negative MaxOperationSize %d", p.MaxOperationSize)
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

// allowsPatch reports whether the profile accepts a patch action.
func (p Profile) allowsPatch(a PatchAction) bool {
	if len(p.Patches) == 0 {
		return slices.Contains(referencePatches, a)
	}
	return slices.Contains(p.Patches, a)
}

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
