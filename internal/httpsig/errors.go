package httpsig

import "errors"

// Error classes of Verify. Every error Verify returns matches at most one of them with
// errors.Is; anything else (a body that could not be read, a resolver that broke its contract)
// is a plain wrapped error, which callers map to 500.
var (
	// ErrUnauthenticated: the request carries no acceptable signature (missing, malformed,
	// unknown or wrong key, unsigned or mismatched digest, stale Date, replay). Map it to 401.
	ErrUnauthenticated = errors.New("httpsig: request not authenticated")
	// ErrUnavailable: the signature could not be checked right now (the key could not be
	// fetched, or the replay cache is full). The sender should retry; map it to 503.
	ErrUnavailable = errors.New("httpsig: signature cannot be checked now")
	// ErrBodyTooLarge: the body is larger than the configured limit. Map it to 413. Sign
	// returns it too, for a body larger than the signer's limit.
	ErrBodyTooLarge = errors.New("httpsig: body larger than allowed")
	// ErrKeyNotFound is what a KeyResolverFunc returns (wrapped) when the key definitely does
	// not exist, as opposed to a failure to fetch it: Verify then reports ErrUnauthenticated
	// rather than ErrUnavailable.
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
	errBadKey          = errors.New("key is not an Ed25519 public key")
	errBadSignature    = errors.New("signature does not verify")
	errReplay          = errors.New("signature already used")
	errReplayCacheFull = errors.New("replay cache full")
)
