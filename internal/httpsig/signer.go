package httpsig

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Header lists as Orb writes them: the header names capitalised, the signing string
// lower-cased. Orb's verifier is known to accept exactly these.
var (
	signedWithoutBody = []string{requestTarget, headerDate}
	signedWithBody    = []string{requestTarget, headerDate, headerDigest}
)

// Signer signs outgoing requests with one Ed25519 key. It is safe for concurrent use.
type Signer struct {
	cfg SignerConfig
}

// NewSigner returns a Signer for cfg.
func NewSigner(cfg SignerConfig) (*Signer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new signer: %w", err)
	}
	return &Signer{cfg: cfg}, nil
}

// Sign sets the Date header and, when r has a non-empty body, a SHA-256 Digest header, then the
// Signature header over (request-target), Date and Digest. r must be a client request with
// its final method and URL, and must not be changed afterwards. A body is read (at most
// MaxBodyBytes) through r.GetBody when set, else consumed and replaced with an identical one.
func (s *Signer) Sign(r *http.Request) error {
	body, err := s.body(r)
	if err != nil {
		return fmt.Errorf("sign request: %w", err)
	}
	r.Header.Set(headerDate, s.cfg.NowFunc().UTC().Format(http.TimeFormat))
	names := signedWithoutBody
	if len(body) > 0 {
		r.Header.Set(headerDigest, digestSHA256(body))
		names = signedWithBody
	} else {
		// A stale Digest would be checked against the empty body by a careful verifier.
		r.Header.Del(headerDigest)
	}
	p := signatureParams{headers: lowerAll(names)}
	str, err := signingString(r, r.URL.RequestURI(), &p)
	if err != nil {
		return fmt.Errorf("sign request: %w", err)
	}
	sig := ed25519.Sign(s.cfg.PrivateKey, []byte(str))
	r.Header.Set(headerSignature, formatSignatureHeader(s.cfg.KeyID, algorithmSign, names, sig))
	return nil
}

// body returns r's body without using it up.
func (s *Signer) body(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.GetBody != nil {
		rc, err := r.GetBody()
		if err != nil {
			return nil, fmt.Errorf("get body: %w", err)
		}
		defer rc.Close()
		return readLimited(rc, s.cfg.MaxBodyBytes)
	}
	body, err := readLimited(r.Body, s.cfg.MaxBodyBytes)
	if cerr := r.Body.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close body: %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	r.ContentLength = int64(len(body))
	if len(body) == 0 {
		// A client request with a non-nil Body and length 0 would be sent chunked.
		r.Body, r.GetBody = http.NoBody, nil
		return nil, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}

func readLimited(rd io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(rd, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("read body: %w: more than %d bytes", ErrBodyTooLarge, limit)
	}
	return body, nil
}

func lowerAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	return out
}
