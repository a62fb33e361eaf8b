package httpsig

import "errors"

// Error classes of Verify. Every error Verify returns matches at most one of them with
// errors.Is; anything else (a body that could not be read, a resolver that broke its contract)
// is a plain wrapped error, which callers map to 500.
var (
	// ErrUnauthenticated: the request carries no acceptable signature (missing, malformed,
	// unknown or wrong key, unsigned or mismatched digest, stale Date, replay). Map it to 401.
	ErrUnauthenticated = errors.New("httpsig: request not authenticated")
	// ErrUnavailable: the signature could not be checked right now (the replay cache is
	// full). The sender should retry; map it to 503.
	ErrUnavailable = errors.New("httpsig: signature cannot be checked now")
	// ErrKeyUnverified is wrapped, with ErrUnauthenticated, by every refusal that involves the
	// signature's key: a keyId that is not an http(s) URL (on the claimed signer's host and
	// port, for VerifyFrom); a key the resolver did not return, whatever the reason (it does
	// not exist, it could not be fetched, its address is refused); a key that is not Ed25519 or
	// whose owner is not the claimed signer; a signature the key does not verify. A server
	// answers all of them alike, one status and one code, so that its answer does not tell
	// what resolving the key found (an open port, a closed one, a document); the cause stays
	// in the error for the log.
	ErrKeyUnverified = errors.New("httpsig: the signature's key could not be verified")
	// ErrBodyTooLarge: the body is larger than the configured limit. Map it to 413. Sign
	// returns it too, for a body larger than the signer's limit.
	ErrBodyTooLarge = errors.New("httpsig: body larger than allowed")
	// ErrKeyNotFound is what a KeyResolverFunc returns (wrapped) when the key definitely does
	// not exist, as opposed to a failure to fetch it. Verify reports both as ErrKeyUnverified;
	// the distinction is for the resolver's own caching and for the log.
	ErrKeyNotFound = errors.New("httpsig: key not found")
)

// Reasons for ErrUnauthenticated; Verify joins one of them to the class so that the message
// says what was wrong and tests can tell the cases apart.
var (
	errNoSignature     = errors.New("no Signature header")
	errMalformed       = errors.New("malformed Signature header")
	errAlgorithm       = errors.New("algorithm not accepted")
	errNotSigned       = errors.New("required header not signed")
	errMissingHeader   = errors.New("signed header missing")
	errDate            = errors.New("bad Date")
	errClockSkew       = errors.New("date outside the allowed clock skew")
	errExpired         = errors.New("signature expired or not yet valid")
	errDigest          = errors.New("digest mismatch")
	errDigestMalformed = errors.New("malformed Digest header")
	errUnknownKey      = errors.New("unknown key")
	errKeyUnreachable  = errors.New("key could not be resolved")
	errKeyIDNotURL     = errors.New("keyId is not an http(s) URL")
	errKeyIDElsewhere  = errors.New("keyId is not on the signer's host")
	errOtherOwner      = errors.New("key belongs to another actor than the signer")
	errBadKey          = errors.New("key is not an Ed25519 public key")
	errBadSignature    = errors.New("signature does not verify")
	errReplay          = errors.New("signature already used")
	errReplayCacheFull = errors.New("replay cache full")
)
