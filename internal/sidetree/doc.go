// Package sidetree speaks Sidetree v1 as the reference implementation (decentralized-identity/
// sidetree, lib/core/versions/1.0, what ION runs) does: operation requests, hashing and
// commitments, compact JWS, DID state patches, DIDs in short and long form, and resolution. It is
// pure: no I/O, no logging, no package-level mutable state. Batch files are in the subpackage
// batchfile, the JSON model in jsontree, a test and load-generation wallet in wallet.
//
// # API
//
// Intake:
//
//   - ParseOperation(body, Profile) (*Operation, error) validates a POST /operations body
//     statelessly. Operation carries Type, Suffix and Request, the bytes to store and queue.
//   - ParseDID(Profile, did) (*DID, error) parses a short- or long-form DID; for a long form,
//     DID.Create is the embedded create operation.
//   - (*State).Check(*Operation) error tests an operation against the DID's current state (nil
//     state: the DID has no anchored create).
//   - (*State).CheckLimits(Profile, *Operation) error tests it against what one DID may grow
//     to: Profile.MaxOperationsPerDID anchored operations and a rendered document of
//     Profile.MaxDocumentBytes (codes too_many_operations, document_too_large).
//   - RenderCreateResponse(Profile, *Operation) is the body of a successful create.
//
// Resolution:
//
//   - Resolve(Profile, suffix, []AnchoredOperation) *State applies anchored operations (from
//     batchfile.Read, with Sequence set by the caller); nil means not found.
//   - RenderResolution(*DID, *State) (body, ResolutionStatus) renders the resolution result;
//     ResolutionFound → 200, ResolutionDeactivated → 410, ResolutionNotFound → 404 (no body).
//
// Errors: every rejection is an *Error{Code, Message}; Code values are stable (see error.go) and
// the struct marshals to the {"code","message"} body of an HTTP 400. CodeOf extracts a code.
//
// Primitives: HashOut, DecodeMultihash, Canonicalize (JCS), RevealValue, Commitment,
// CommitmentFromReveal, LongFormDID, ShortFormDID.
//
// # Profile
//
// Profile{Method, Algorithms, MaxDeltaSize, MaxOperationsPerDID, MaxDocumentBytes}; the zero
// value and DefaultProfile() mean method "sidetree", ES256K only, 1000-byte deltas (ION's rules),
// at most 1,000 operations per DID and 64 KiB documents (ours: ION has no such bounds). Method may carry a network segment
// ("ion:test"). Adding EdDSA to Algorithms also accepts Ed25519 update/recovery keys as the JWK
// {"kty":"OKP","crv":"Ed25519","x"}; reveal values and commitments hash exactly that 3-member
// JWK (as transmute's vectors do; core-go's JWK struct would add "y":"" and hash differently).
// The JWS header's alg must match the key type. transmute's v1-ed25519-operations.json signs
// with Ed25519 under a header that says ES256K; those operations are rejected
// (key_algorithm_mismatch under an EdDSA profile, invalid_key under the default one): the header
// is signed, so a verifier that believed the key over the header would accept an algorithm the
// signer did not state. ietf-json-patch is not supported (as in ION); there is no flag for it.
//
// # Validation: what is checked, and where this package is stricter than the reference
//
// ParseOperation applies the reference implementation's request rules (RequestHandler,
// *Operation.parseObject, InputValidator, Jwk.validateJwkEs256k, Jws, DocumentComposer):
// property whitelists and counts, multihash fields, delta size (JCS bytes ≤ MaxDeltaSize,
// measured before the schema, as there), patches, the JWS header being exactly {"alg":…}, the
// payload members, reveal value = HashOut(JCS(revealed key)) compared as strings. Then, which the
// reference implementation leaves to resolution: the signature against the revealed key (high S
// accepted) and the delta hash. Then core-go's key-reuse rules (CodeCommitmentReuse): a create
// whose delta.updateCommitment equals suffixData.recoveryCommitment; an update whose
// delta.updateCommitment is the commitment of the key it reveals; a recover whose
// delta.updateCommitment equals its new recoveryCommitment, or whose new recoveryCommitment is
// the commitment of the key it reveals.
//
// Stricter than the reference implementation, on purpose:
//   - JSON: duplicate member names, invalid UTF-8, lone surrogates, numbers beyond float64 and
//     nesting deeper than 100 are rejected (JSON.parse would accept them, ambiguously).
//   - Multihashes decode strictly: canonical base64url, exactly 0x12 0x20 + 32 bytes (the
//     reference implementation accepts any digest length and non-zero trailing bits).
//   - publicKeyJwk must not be null and must not carry private members (d, p, q, dp, dq, qi,
//     oth, k); a replace document must be an object; a string serviceEndpoint must be a URI with
//     a scheme (the spec's rule; uri-js accepts almost anything).
//   - A DID's suffix must be a valid multihash; a long-form initial state must have exactly the
//     members delta and suffixData, and its create must pass ParseOperation (so its delta hash
//     must match; the reference implementation would resolve a mismatching one to an empty
//     document).
//
// As lenient as the reference implementation: extra members of a replace patch are ignored, an
// empty purposes array is accepted, remove-* of unknown ids is a no-op.
//
// # Resolution
//
// Resolve follows lib/core/Resolver.ts and OperationProcessor.ts. Anchored operations are parsed
// with the reference implementation's lenient rules (a create or recover whose delta is missing
// or invalid still applies, without update commitment and with an empty document; a create
// rebuilt without a delta member fails the 3-member rule, as there). The first create wins; the
// recover/deactivate chain is applied before updates; for each expected commitment the earliest
// operation (by Sequence, then Position) that applies wins; an operation that would expect a
// commitment already consumed, or the one it opens, is skipped; an operation anchored in the
// same anchor as the last applied one does not apply (the reference implementation detects
// "applied" by a changed transaction number). Nothing an operation contains can make Resolve
// fail or panic.
//
// Resolution costs time linear in the DID's history (plus the sort): one resolution owns its
// state and changes it in place, patches cost their own size (entries indexed by id), and each
// commitment is expected at most once, so each operation is tried at most once. The per-DID
// limits are enforced at intake only: applying them during resolution would make this package
// resolve some anchored histories differently from the reference implementation.
//
// RenderResolution reproduces DocumentComposer.transformToExternalDocument. Member order follows
// the DIF vector files: in didDocumentMetadata they put canonicalId/equivalentId before method and
// deactivated first, where JSON.stringify of the reference implementation's object would put
// method first; the values are identical. The spec says deactivated MUST be false when not
// deactivated; like the reference implementation and the vectors, it is omitted.
package sidetree
