package httpsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
)

// digestAlgorithms are the RFC 3230 digest algorithms Verify checks: SHA-256, which we send,
// and SHA-512, which Orb sends.
var digestAlgorithms = map[string]func() hash.Hash{
	"SHA-256": sha256.New,
	"SHA-512": sha512.New,
}

// digestSHA256 is the Digest header value we send for body.
func digestSHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])
}

// checkDigest checks a Digest header value against body. The value is a comma-separated list
// of algorithm=base64 entries; algorithm names are case-insensitive. Entries of algorithms we do
// not know are skipped, every known one must match, and at least one must be known: a sender
// cannot make us skip the check by naming only an exotic algorithm.
func checkDigest(value string, body []byte) error {
	if len(value) > maxDigestHeaderBytes {
		return fmt.Errorf("%w: longer than %d bytes", errDigestMalformed, maxDigestHeaderBytes)
	}
	entries := strings.Split(value, ",")
	if len(entries) > maxDigestEntries {
		return fmt.Errorf("%w: more than %d entries", errDigestMalformed, maxDigestEntries)
	}
	checked := 0
	for _, e := range entries {
		alg, enc, ok := strings.Cut(strings.Trim(e, " \t"), "=")
		if !ok || alg == "" || enc == "" {
			return fmt.Errorf("%w: entry %q is not algorithm=value", errDigestMalformed, e)
		}
		newHash, known := digestAlgorithms[strings.ToUpper(alg)]
		if !known {
			continue
		}
		want, err := base64.StdEncoding.Strict().DecodeString(enc)
		if err != nil {
			return fmt.Errorf("%w: %s value is not base64: %w", errDigestMalformed, alg, err)
		}
		h := newHash()
		h.Write(body)
		if subtle.ConstantTimeCompare(h.Sum(nil), want) != 1 {
			return fmt.Errorf("%w: %s of the body differs", errDigest, alg)
		}
		checked++
	}
	if checked == 0 {
		return fmt.Errorf("%w: no SHA-256 or SHA-512 entry", errDigestMalformed)
	}
	return nil
}

// readBody reads at most limit bytes of r's body and puts an unread copy back, so the handler
// that runs after Verify reads the same bytes. A request without a body gives nil.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := readLimited(r.Body, limit)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}
