package httpsig

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func FuzzParseSignatureHeader(f *testing.F) {
	f.Add(`keyId="https://orb.example/services/orb/keys/main-key",algorithm="Sign",headers="(request-target) Date Digest",signature="` + sig64 + `"`)
	f.Add(` keyId = "k" , headers="(request-target) date",signature="` + sig64 + `",created=1700000000,expires=1700000300.25`)
	f.Add(`keyId="k",signature="` + sig64 + `",x="",y="a b"`)
	f.Add(`keyId="k\",signature="`)
	f.Add(`keyId=`)
	f.Add(`,`)
	f.Fuzz(func(t *testing.T, h string) {
		p, err := parseSignatureHeader(h)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error not classed as malformed: %v", err)
			}
			return
		}
		if p.keyID == "" || len(p.keyID) > maxKeyIDBytes || len(p.headers) == 0 || len(p.headers) > maxSignedHeaders {
			t.Fatalf("accepted out-of-bounds header %q: %+v", h, p)
		}
		// What we parsed, written back the way Sign writes it, parses to the same values.
		again, err := parseSignatureHeader(formatSignatureHeader(p.keyID, p.algorithm, p.headers, p.signature[:]))
		if err != nil {
			t.Fatalf("reformatted header does not parse: %v", err)
		}
		if again.keyID != p.keyID || again.algorithm != p.algorithm || again.signature != p.signature ||
			!slices.Equal(again.headers, p.headers) {
			t.Fatalf("round trip changed %+v into %+v", p, again)
		}
	})
}

// FuzzVerify runs Verify on arbitrary Signature, Date and Digest values, method, path and body.
// Whatever comes in, Verify must not panic, must accept only what the test key signed, must
// class every refusal, and must leave the body readable.
func FuzzVerify(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	signer, err := NewSigner(SignerConfig{KeyID: testKeyID, PrivateKey: priv, NowFunc: func() time.Time { return testTime }})
	if err != nil {
		f.Fatal(err)
	}
	seed := func(method, path, body string) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r, err := http.NewRequest(method, "https://b.example"+path, rd)
		if err != nil {
			f.Fatal(err)
		}
		if err := signer.Sign(r); err != nil {
			f.Fatal(err)
		}
		sig, date, digest := r.Header.Get("Signature"), r.Header.Get("Date"), r.Header.Get("Digest")
		// The signed seeds must pass, so that the fuzzer starts from the accepting path.
		if _, _, err := fuzzVerify(priv, sig, date, digest, method, path, body); err != nil {
			f.Fatalf("seed %s %s refused: %v", method, path, err)
		}
		f.Add(sig, date, digest, method, path, body)
	}
	seed("POST", "/services/anchord/inbox", `{"type":"Follow"}`)
	seed("GET", "/services/anchord/outbox?page=true", "")
	seed("PUT", "/a%2Fb?c=%20", "x")
	f.Add(`keyId="`+testKeyID+`",algorithm="Sign",headers="(request-target) Date",signature="`+sig64+`"`,
		testTime.Format(http.TimeFormat), "", "GET", "/", "")
	f.Add(`keyId="`+testKeyID+`",headers="(request-target) Date Digest",signature="`+sig64+`"`,
		"Wed, 01 May 2024 12:00:00 GMT", "SHA-512=AAAA,SHA-256=", "POST", "/inbox", "x")

	f.Fuzz(func(t *testing.T, sig, date, digest, method, path, body string) {
		got, r, err := fuzzVerify(priv, sig, date, digest, method, path, body)
		switch {
		case r == nil:
			return
		case err == nil:
			if got != (Verified{KeyID: testKeyID, Owner: testOwner}) {
				t.Fatalf("accepted with %+v", got)
			}
		case errors.Is(err, ErrBodyTooLarge):
			return
		case !errors.Is(err, ErrUnauthenticated):
			t.Fatalf("refusal not classed as unauthenticated: %v", err)
		}
		read, err := io.ReadAll(r.Body)
		if err != nil || string(read) != body {
			t.Fatalf("body not restored: %q, %v", read, err)
		}
	})
}

// fuzzVerify builds the server-side request and verifies it with a fresh verifier whose
// resolver knows only priv. It returns a nil request for inputs that are not a request.
func fuzzVerify(priv ed25519.PrivateKey, sig, date, digest, method, path, body string) (Verified, *http.Request, error) {
	if !validMethod(method) || !strings.HasPrefix(path, "/") {
		return Verified{}, nil, nil
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return Verified{}, nil, nil
	}
	r := httptest.NewRequest(method, "https://b.example"+u.RequestURI(), strings.NewReader(body))
	r.Header.Set("Signature", sig)
	r.Header.Set("Date", date)
	r.Header.Set("Digest", digest)
	v, err := NewVerifier(VerifierConfig{
		ResolveKeyFunc: func(_ context.Context, keyID string) (PublicKey, error) {
			if keyID != testKeyID {
				return PublicKey{}, ErrKeyNotFound
			}
			return PublicKey{Key: priv.Public().(ed25519.PublicKey), Owner: testOwner}, nil
		},
		MaxBodyBytes: 4096,
		NowFunc:      func() time.Time { return testTime },
	})
	if err != nil {
		return Verified{}, nil, err
	}
	got, err := v.Verify(r)
	return got, r, err
}

func validMethod(m string) bool {
	if m == "" || len(m) > 16 {
		return false
	}
	for i := range len(m) {
		if m[i] < 'A' || m[i] > 'Z' {
			return false
		}
	}
	return true
}
