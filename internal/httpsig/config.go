package httpsig

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"
)

// Defaults of SignerConfig and VerifierConfig fields left zero.
const (
	// MaxClockSkewDefault is how far a request's Date may be from the verifier's clock, either
	// way. Orb checks no freshness at all; five minutes covers unsynchronised clocks and slow
	// queues without keeping a captured request usable for long.
	MaxClockSkewDefault = 5 * time.Minute
	// MaxBodyBytesDefault bounds the body read to compute or check a digest. Federation
	// activities (an anchor event carries its linkset as a gzip data URI) are a few kilobytes.
	MaxBodyBytesDefault = 1 << 20
	// ReplayCacheSizeDefault is the number of signatures remembered. Full, the cache takes
	// about 20 MB (measured) and it admits a sustained 160 verified requests per second with
	// the default skew (entries live 2×skew = 10 minutes).
	ReplayCacheSizeDefault = 100_000
)

// Bounds on what a peer may send, beyond which a request is refused as malformed.
const (
	maxSignatureHeaderBytes = 4096
	maxKeyIDBytes           = 2048
	maxSignedHeaders        = 16
	maxParams               = 16
	maxDigestHeaderBytes    = 512
	maxDigestEntries        = 4
	maxPEMBytes             = 4096
	maxDateBytes            = 64
)

// SignerConfig configures a Signer.
type SignerConfig struct {
	// KeyID is the keyId the verifier resolves: the actor's `<actor>/keys/main-key`, or a
	// did:web key IRI. Required.
	KeyID string
	// PrivateKey signs. Required.
	PrivateKey ed25519.PrivateKey
	// MaxBodyBytes bounds the body hashed for the Digest header.
	MaxBodyBytes int64
	// NowFunc is the clock of the Date header; nil means time.Now.
	NowFunc func() time.Time
}

func (c SignerConfig) withDefaults() SignerConfig {
	c.MaxBodyBytes = cmpOr(c.MaxBodyBytes, MaxBodyBytesDefault)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	return c
}

func (c SignerConfig) validate() error {
	if err := checkKeyID(c.KeyID); err != nil {
		return err
	}
	if len(c.PrivateKey) != ed25519.PrivateKeySize {
		return fmt.Errorf("private key has %d bytes, want %d", len(c.PrivateKey), ed25519.PrivateKeySize)
	}
	return nil
}

// checkKeyID refuses a key id that cannot be written as a quoted parameter.
func checkKeyID(id string) error {
	if id == "" {
		return errors.New("key id is empty")
	}
	if len(id) > maxKeyIDBytes {
		return fmt.Errorf("key id longer than %d bytes", maxKeyIDBytes)
	}
	for i := range len(id) {
		if !isQuotedChar(id[i]) {
			return fmt.Errorf("key id has a forbidden character at %d", i)
		}
	}
	return nil
}

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// ResolveKeyFunc finds the public key named by a signature's keyId. Required.
	ResolveKeyFunc KeyResolverFunc
	// MaxClockSkew is how far Date may be from now, either way; signatures are remembered
	// for twice as long.
	MaxClockSkew time.Duration
	// MaxBodyBytes bounds the body read to check the digest.
	MaxBodyBytes int64
	// ReplayCacheSize is the number of signatures remembered inside the replay window.
	ReplayCacheSize int
	// NowFunc is the clock Date is compared with; nil means time.Now.
	NowFunc func() time.Time
}

func (c VerifierConfig) withDefaults() VerifierConfig {
	c.MaxClockSkew = cmpOr(c.MaxClockSkew, MaxClockSkewDefault)
	c.MaxBodyBytes = cmpOr(c.MaxBodyBytes, MaxBodyBytesDefault)
	c.ReplayCacheSize = cmpOr(c.ReplayCacheSize, ReplayCacheSizeDefault)
	if c.NowFunc == nil {
		c.NowFunc = time.Now
	}
	return c
}

func (c VerifierConfig) validate() error {
	if c.ResolveKeyFunc == nil {
		return errors.New("key resolver is nil")
	}
	return nil
}

func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
