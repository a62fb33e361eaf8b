// Package vc builds, signs and verifies the anchor verifiable credentials that anchord domains
// exchange with each other and with Orb: the origin's credential for each anchor, and the
// Ed25519Signature2020 proofs that the origin and its witnesses add to it. It also derives
// did:web identifiers and serves and reads the DID documents that publish the signing keys.
//
// It holds no state and starts no goroutines; HTTP serving, ActivityPub and storage live
// elsewhere.
//
// # Compatibility with Orb
//
// A proof is what Orb produces and accepts:
//
//   - The signed data is sha256(canonical(proof options)) ‖ sha256(canonical(document)), where
//     canonical is URDNA2015 over JSON-LD 1.1 (github.com/piprate/json-gold), the document is
//     the credential without its proof member, and the proof options are the proof's members
//     except proofValue, jws and nonce, under the document's @context.
//   - Before signing, the Ed25519Signature2020 context is appended to the credential's
//     @context unless present; NewAnchorCredential already includes it, and verification
//     appends it the same way, so a witness's proof over an offered credential verifies on the
//     credential the origin publishes.
//   - proofValue is multibase base58btc ("z…") of the 64-byte signature; created is signed as
//     the exact text in the proof.
//   - A DID document's publicKeyMultibase is base58btc of the raw 32-byte key, without the
//     multicodec prefix, as Orb writes it; both forms are read.
//
// # Invariants
//
//   - JSON-LD contexts come only from the embedded copies (Loader); a document naming any other
//     context fails with ErrUnknownContext, and nothing is fetched from the network.
//   - Nothing unsigned passes as signed: signing and verifying refuse a document with a member
//     its contexts do not define (ErrUndefinedTerm), because URDNA2015 would silently drop it
//     from the signed data. CheckStrict additionally applies Orb's own strict-parse rule.
//   - Every size read is bounded: MaxDocumentSize bytes, maxDepth nesting, MaxProofs proofs,
//     and, before URDNA2015 runs, maxQuads statements and maxBlankNodes blank nodes
//     (ErrTooComplex), because its cost is factorial in indistinguishable blank nodes.
//     Malformed input returns an error, never a panic.
//   - A Credential is immutable; Sign and AddProof return new values.
package vc
