// Package httpsig signs and verifies the HTTP requests federation domains send each other,
// with Ed25519 keys and draft-cavage "Signature" headers in the exact shape a real Orb server
// sends and accepts, plus checks Orb leaves out (freshness, replay, bounded input). It also reads
// and writes public keys in Orb's PEM form. It holds no key store and fetches nothing: keys come
// from the caller's KeyResolverFunc, and metrics are the caller's.
//
// # What is signed
//
// Sign sets Date (RFC 1123, GMT) and writes
//
//	Signature: keyId="<key IRI>",algorithm="Sign",headers="(request-target) Date Digest",signature="<base64>"
//
// over the lower-cased signing string "(request-target): post /path?query\ndate: …\ndigest: …".
// A request with a non-empty body also gets "Digest: SHA-256=<base64>" and signs it; one
// without (a GET) signs "(request-target) Date" only and carries no Digest. The algorithm is
// "Sign" because that is the name Orb registers and Orb refuses any other, "Ed25519" included.
// Host is not signed, as Orb does not sign it.
//
// # What Verify rejects
//
// With ErrUnauthenticated (401): no Signature header or more than one; a header that is not
// strictly name="value",… within the size bounds, lacks keyId or a 64-byte signature, or
// repeats a parameter or a header name; an algorithm other than Sign, ed25519 or hs2019
// (case-insensitive; absent means "from the key"), since the key is always Ed25519; a header
// list without (request-target) and Date; a Date missing, unparsable or more than MaxClockSkew
// from the verifier's clock either way, a (created) in the future or an (expires) in the past
// beyond that skew; a signed header that is missing or repeated; a non-empty body whose Digest
// is not signed; a Digest (signed, or unsigned but non-empty) without a SHA-256 or SHA-512
// entry, or with one that does not match the body; a signature already accepted. With
// ErrUnauthenticated and ErrKeyUnverified (401, all answered alike): a keyId that is not an
// http(s) URL, or (VerifyFrom) not on the claimed signer's host and port; a key the resolver did
// not return, whether it does not exist or could not be fetched; a key that is not 32 bytes or
// whose owner is not the claimed signer; a signature that does not verify. With
// ErrBodyTooLarge (413): a body over MaxBodyBytes. With ErrUnavailable (503): a full replay
// cache. Orb's shapes pass: SHA-512 digests, the empty unsigned Digest header on its GETs,
// capitalised names in the headers parameter.
//
// # Keys are fetched only from the signer's host
//
// A keyId is a URL the verifier's resolver dereferences before anything cryptographic is
// known, so it is an address chosen by whoever sent the request. VerifyFrom takes the actor the
// request claims to come from and refuses a keyId on any other host and port before the
// resolver is called; the resolver (KeyResolverFunc) fetches nothing but on the keyId's host.
// What the resolver found is not told apart in the errors' classes: an answer built from the
// classes is the same for a key that does not exist, a port that is closed, one that speaks
// another protocol and one the outbound guard refuses.
//
// # Replay window
//
// A verified signature is remembered for 2×MaxClockSkew from its acceptance. That covers its
// whole life: Date is at most MaxClockSkew ahead of the clock when accepted, and the request is
// refused as stale once Date is more than MaxClockSkew behind. The cache holds at most
// ReplayCacheSize signatures. When full it drops only entries older than the window and, if
// none are, refuses new requests with ErrUnavailable rather than forget a live signature; so a
// peer that floods us with validly signed requests can make others wait, which the caller's
// per-peer limits must prevent. Only signatures that verified are remembered.
//
// Limits of this defence: the cache is per process, so in a cluster a captured request can be
// replayed once to each instance within the window (inbox de-duplication by activity id, as
// Orb does, remains necessary); Host is unsigned, so within the window a request may be
// replayed to another domain serving the same path; and Ed25519 is deterministic, so the same
// request sent twice within one second of Date carries the same signature and the second is
// refused as a replay (resending after a second gives a new Date).
package httpsig
