package httpsig

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PublicKey is a signing key as published by its owner.
type PublicKey struct {
	// Key is the raw 32-byte Ed25519 public key.
	Key ed25519.PublicKey
	// Owner is the IRI of the actor that owns the key.
	Owner string
}

// KeyResolverFunc returns the key a signature's keyId names. It MUST return an error wrapping
// ErrKeyNotFound when the key definitively does not exist (the key document answers 404 or
// 410, or the actor does not list it) and any other error when it could not find out (network,
// timeout, 5xx, a refused address). It MUST fetch nothing but on the keyId's host and port, the
// owner's actor document included, and MUST check that the owner's actor document names keyID as its public key,
// as Orb does, so that one actor cannot sign as another. It should cache.
type KeyResolverFunc func(ctx context.Context, keyID string) (PublicKey, error)

// Verified is who signed a request that Verify accepted.
type Verified struct {
	// KeyID is the signature's keyId.
	KeyID string
	// Owner is the IRI of the actor owning the key, as the resolver returned it.
	Owner string
}

// Verifier checks signed incoming requests. It is safe for concurrent use, and holds the
// replay cache, so one Verifier must serve every route of a process.
type Verifier struct {
	cfg    VerifierConfig
	replay *replayCache
}

// NewVerifier returns a Verifier for cfg.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new verifier: %w", err)
	}
	return &Verifier{cfg: cfg, replay: newReplayCache(2*cfg.MaxClockSkew, cfg.ReplayCacheSize)}, nil
}

// Verify checks r's signature and returns the signer. On success r's body has been read (at
// most MaxBodyBytes) and replaced by an identical unread one. Errors match ErrUnauthenticated,
// ErrUnavailable or ErrBodyTooLarge with errors.Is, and every refusal that involves the key
// also ErrKeyUnverified; any other error is a failure to read the body or a resolver bug. The
// checks run cheapest first and the key is resolved last, so that a request refused for its
// form costs no key fetch; the keyId must be an http(s) URL.
func (v *Verifier) Verify(r *http.Request) (Verified, error) {
	return v.verify(r, "")
}

// VerifyFrom is Verify for a request sent on behalf of signer, the actor the request says it
// comes from (an inbox activity's actor): before the key is resolved, its keyId must be an
// http(s) URL on signer's host and port, so that a request can make us fetch nothing but from
// the host it claims to come from; and the key's owner must be signer.
func (v *Verifier) VerifyFrom(r *http.Request, signer string) (Verified, error) {
	if signer == "" {
		return Verified{}, errors.New("verify request: no signer to verify against")
	}
	return v.verify(r, signer)
}

func (v *Verifier) verify(r *http.Request, signer string) (Verified, error) {
	now := v.cfg.NowFunc()
	p, str, err := v.check(r, now)
	if err != nil {
		return Verified{}, fmt.Errorf("verify request: %w", err)
	}
	if err := checkKeyIDHost(p.keyID, signer); err != nil {
		return Verified{}, fmt.Errorf("verify request: %w", keyUnverified(err))
	}
	key, err := v.resolve(r.Context(), p.keyID)
	if err != nil {
		return Verified{}, fmt.Errorf("verify request: %w", err)
	}
	if signer != "" && key.Owner != signer {
		return Verified{}, fmt.Errorf("verify request: %w", keyUnverified(fmt.Errorf("%w: %q, not %q", errOtherOwner, key.Owner, signer)))
	}
	if !ed25519.Verify(key.Key, []byte(str), p.signature[:]) {
		return Verified{}, fmt.Errorf("verify request: %w", keyUnverified(fmt.Errorf("%w with key %q", errBadSignature, p.keyID)))
	}
	// Only verified signatures enter the cache, so forged ones cannot fill it.
	if err := v.replay.add(p.signature, now); err != nil {
		if errors.Is(err, errReplayCacheFull) {
			return Verified{}, fmt.Errorf("verify request: %w: %w", ErrUnavailable, err)
		}
		return Verified{}, fmt.Errorf("verify request: %w", unauthenticated(err))
	}
	return Verified{KeyID: p.keyID, Owner: key.Owner}, nil
}

// checkKeyIDHost requires keyID to be an http(s) URL and, when signer is given, to be on its
// host and port.
func checkKeyIDHost(keyID, signer string) error {
	k, err := url.Parse(keyID)
	if err != nil || (k.Scheme != "http" && k.Scheme != "https") || k.Host == "" || k.User != nil {
		return errKeyIDNotURL
	}
	if signer != "" && !SameHost(keyID, signer) {
		return fmt.Errorf("%w %q", errKeyIDElsewhere, signer)
	}
	return nil
}

// SameHost reports whether a and b are http(s) URLs on one host and port: the scheme's default
// port made explicit, the host compared without case. Anything else is not the same host.
func SameHost(a, b string) bool {
	ha, ok1 := hostPort(a)
	hb, ok2 := hostPort(b)
	return ok1 && ok2 && ha == hb
}

func hostPort(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return "", false
	}
	port := u.Port()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false
	case port == "" && u.Scheme == "http":
		port = "80"
	case port == "":
		port = "443"
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

// check does everything that needs no key and returns the parsed header and signing string.
func (v *Verifier) check(r *http.Request, now time.Time) (signatureParams, string, error) {
	var p signatureParams
	hs := r.Header.Values(headerSignature)
	switch len(hs) {
	case 0:
		return p, "", unauthenticated(errNoSignature)
	case 1:
	default:
		return p, "", unauthenticated(fmt.Errorf("%w: %d Signature headers", errMalformed, len(hs)))
	}
	p, err := parseSignatureHeader(hs[0])
	if err != nil {
		return p, "", unauthenticated(err)
	}
	if p.algorithm != "" && !slices.ContainsFunc(acceptedAlgorithms, func(a string) bool {
		return strings.EqualFold(a, p.algorithm)
	}) {
		return p, "", unauthenticated(fmt.Errorf("%w: %q", errAlgorithm, p.algorithm))
	}
	for _, required := range []string{requestTarget, "date"} {
		if !slices.Contains(p.headers, required) {
			return p, "", unauthenticated(fmt.Errorf("%w: %s", errNotSigned, required))
		}
	}
	if err := v.checkTimes(r, &p, now); err != nil {
		return p, "", unauthenticated(err)
	}
	body, err := readBody(r, v.cfg.MaxBodyBytes)
	if err != nil {
		return p, "", err
	}
	if err := checkBodyDigest(r, &p, body); err != nil {
		return p, "", unauthenticated(err)
	}
	if v.replay.seen(p.signature, now) {
		return p, "", unauthenticated(errReplay)
	}
	str, err := signingString(r, requestTargetOf(r), &p)
	if err != nil {
		return p, "", unauthenticated(err)
	}
	return p, str, nil
}

// checkTimes bounds Date, and (created) and (expires) when the sender gave them, by the clock
// skew. Date is signed (check made sure), so it cannot be moved.
func (v *Verifier) checkTimes(r *http.Request, p *signatureParams, now time.Time) error {
	skew := v.cfg.MaxClockSkew
	dv, err := headerValue(r, "date")
	if err != nil {
		return err
	}
	if len(dv) > maxDateBytes {
		return fmt.Errorf("%w: longer than %d bytes", errDate, maxDateBytes)
	}
	date, err := http.ParseTime(dv)
	if err != nil {
		return fmt.Errorf("%w: %q: %w", errDate, dv, err)
	}
	if d := now.Sub(date); d > skew || d < -skew {
		return fmt.Errorf("%w: %s is %s from now", errClockSkew, dv, d.Round(time.Second))
	}
	if p.created != "" {
		if created := unixTime(p.created); created.After(now.Add(skew)) {
			return fmt.Errorf("%w: created %s is in the future", errExpired, p.created)
		}
	}
	if p.expires != "" {
		if expires := unixTime(p.expires); expires.Before(now.Add(-skew)) {
			return fmt.Errorf("%w: expired at %s", errExpired, p.expires)
		}
	}
	return nil
}

// checkBodyDigest requires a body to be covered by a signed Digest and checks every non-empty
// Digest header against it, signed or not. An empty unsigned Digest is what Orb sends on GETs.
func checkBodyDigest(r *http.Request, p *signatureParams, body []byte) error {
	signed := slices.Contains(p.headers, "digest")
	if len(body) > 0 && !signed {
		return fmt.Errorf("%w: digest, and the request has a body", errNotSigned)
	}
	if signed {
		v, err := headerValue(r, "digest")
		if err != nil {
			return err
		}
		if v == "" {
			return fmt.Errorf("%w: signed Digest is empty", errDigestMalformed)
		}
		return checkDigest(v, body)
	}
	for _, v := range r.Header.Values(headerDigest) {
		if v = strings.Trim(v, " \t"); v != "" {
			if err := checkDigest(v, body); err != nil {
				return err
			}
		}
	}
	return nil
}

func (v *Verifier) resolve(ctx context.Context, keyID string) (PublicKey, error) {
	key, err := v.cfg.ResolveKeyFunc(ctx, keyID)
	if err != nil {
		if errors.Is(err, ErrKeyNotFound) {
			return key, keyUnverified(fmt.Errorf("%w %q: %w", errUnknownKey, keyID, err))
		}
		return key, keyUnverified(fmt.Errorf("%w: %q: %w", errKeyUnreachable, keyID, err))
	}
	if len(key.Key) != ed25519.PublicKeySize {
		return key, keyUnverified(fmt.Errorf("%w: key %q has %d bytes", errBadKey, keyID, len(key.Key)))
	}
	if key.Owner == "" {
		return key, fmt.Errorf("resolve key %q: resolver returned no owner", keyID)
	}
	return key, nil
}

func unauthenticated(reason error) error { return fmt.Errorf("%w: %w", ErrUnauthenticated, reason) }

func keyUnverified(reason error) error {
	return fmt.Errorf("%w: %w: %w", ErrUnauthenticated, ErrKeyUnverified, reason)
}

// unixTime reads a created or expires parameter, which the parser has checked is a decimal
// number of at most 20 characters.
func unixTime(s string) time.Time {
	f, _ := strconv.ParseFloat(s, 64)
	// Keep the seconds inside int64; any time this far out is refused or accepted the same.
	f = min(f, 1e15)
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9))
}
