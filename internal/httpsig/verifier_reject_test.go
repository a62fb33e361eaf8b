package httpsig

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestVerifyRejects(t *testing.T) {
	t.Parallel()

	otherKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	post := func(t *testing.T, b *testBundle) *http.Request {
		t.Helper()
		return b.signed(t, b.signer, "POST", testInbox, `{"type":"Create"}`)
	}
	// manual builds an unsigned server request for signManually.
	manual := func(method, body string) *http.Request {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r := httptest.NewRequest(method, testInbox, rd)
		r.Header.Set("Date", testTime.Format(http.TimeFormat))
		if body != "" {
			r.Header.Set("Digest", digestSHA256([]byte(body)))
		}
		return r
	}

	tests := []struct {
		name    string
		request func(t *testing.T, b *testBundle) *http.Request
		class   error // ErrUnauthenticated, ErrUnavailable or ErrBodyTooLarge
		reason  error // for ErrUnauthenticated
		// resolves says whether the key resolver may be asked: checks that need no key
		// must refuse before any fetch.
		resolves bool
	}{
		{
			name: "missing Signature header",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Del("Signature")
				return r
			},
			class: ErrUnauthenticated, reason: errNoSignature,
		},
		{
			name: "two Signature headers",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Add("Signature", r.Header.Get("Signature"))
				return r
			},
			class: ErrUnauthenticated, reason: errMalformed,
		},
		{
			name: "unknown key",
			request: func(t *testing.T, b *testBundle) *http.Request {
				return b.signed(t, b.signerFor(t, "https://c.example/keys/main-key", b.priv), "POST", testInbox, "x")
			},
			class: ErrUnauthenticated, reason: errUnknownKey, resolves: true,
		},
		{
			name: "key cannot be fetched",
			request: func(t *testing.T, b *testBundle) *http.Request {
				return b.signed(t, b.signerFor(t, downKeyID, b.priv), "POST", testInbox, "x")
			},
			class: ErrUnauthenticated, reason: errKeyUnreachable, resolves: true,
		},
		{
			name: "resolved key is not Ed25519",
			request: func(t *testing.T, b *testBundle) *http.Request {
				return b.signed(t, b.signerFor(t, shortKeyID, b.priv), "POST", testInbox, "x")
			},
			class: ErrUnauthenticated, reason: errBadKey, resolves: true,
		},
		{
			name: "wrong key",
			request: func(t *testing.T, b *testBundle) *http.Request {
				return b.signed(t, b.signerFor(t, testKeyID, otherKey), "POST", testInbox, "x")
			},
			class: ErrUnauthenticated, reason: errBadSignature, resolves: true,
		},
		{
			name: "body changed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Body = io.NopCloser(strings.NewReader(`{"type":"Delete"}`))
				return r
			},
			class: ErrUnauthenticated, reason: errDigest,
		},
		{
			name: "body and digest changed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Body = io.NopCloser(strings.NewReader(`{"type":"Delete"}`))
				r.Header.Set("Digest", digestSHA256([]byte(`{"type":"Delete"}`)))
				return r
			},
			class: ErrUnauthenticated, reason: errBadSignature, resolves: true,
		},
		{
			name: "body added to a GET",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := b.signed(t, b.signer, "GET", testOutbox, "")
				r.Body = io.NopCloser(strings.NewReader("smuggled"))
				return r
			},
			class: ErrUnauthenticated, reason: errNotSigned,
		},
		{
			name: "digest not signed on a POST",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("POST", "x")
				signManually(r, b.priv, testKeyID, "Sign", "(request-target) Date")
				return r
			},
			class: ErrUnauthenticated, reason: errNotSigned,
		},
		{
			name: "signed Digest header removed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Del("Digest")
				return r
			},
			class: ErrUnauthenticated, reason: errMissingHeader,
		},
		{
			name: "signed Digest empty",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("POST", "")
				r.Header.Set("Digest", "")
				signManually(r, b.priv, testKeyID, "Sign", "(request-target) Date Digest")
				return r
			},
			class: ErrUnauthenticated, reason: errDigestMalformed,
		},
		{
			name: "digest of an unknown algorithm only",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("POST", "x")
				r.Header.Set("Digest", "MD5=9dd4e461268c8034f5c8564e155c67a6")
				signManually(r, b.priv, testKeyID, "Sign", "(request-target) Date Digest")
				return r
			},
			class: ErrUnauthenticated, reason: errDigestMalformed,
		},
		{
			name: "unsigned non-empty Digest that does not match",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := b.signed(t, b.signer, "GET", testOutbox, "")
				r.Header.Set("Digest", digestSHA256([]byte("x")))
				return r
			},
			class: ErrUnauthenticated, reason: errDigest,
		},
		{
			name: "date too old",
			request: func(t *testing.T, b *testBundle) *http.Request {
				b.verifyClock.Set(testTime.Add(MaxClockSkewDefault + time.Second))
				return post(t, b)
			},
			class: ErrUnauthenticated, reason: errClockSkew,
		},
		{
			name: "date too new",
			request: func(t *testing.T, b *testBundle) *http.Request {
				b.verifyClock.Set(testTime.Add(-MaxClockSkewDefault - time.Second))
				return post(t, b)
			},
			class: ErrUnauthenticated, reason: errClockSkew,
		},
		{
			name: "date unparsable",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				r.Header.Set("Date", "yesterday")
				signManually(r, b.priv, testKeyID, "Sign", "(request-target) Date")
				return r
			},
			class: ErrUnauthenticated, reason: errDate,
		},
		{
			name: "date too long",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				r.Header.Set("Date", testTime.Format(http.TimeFormat)+strings.Repeat("x", maxDateBytes))
				signManually(r, b.priv, testKeyID, "Sign", "(request-target) Date")
				return r
			},
			class: ErrUnauthenticated, reason: errDate,
		},
		{
			name: "date missing",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := b.signed(t, b.signer, "GET", testOutbox, "")
				r.Header.Del("Date")
				return r
			},
			class: ErrUnauthenticated, reason: errMissingHeader,
		},
		{
			name: "date not signed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				signManually(r, b.priv, testKeyID, "Sign", "(request-target)")
				return r
			},
			class: ErrUnauthenticated, reason: errNotSigned,
		},
		{
			name: "request-target not signed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				signManually(r, b.priv, testKeyID, "Sign", "Date")
				return r
			},
			class: ErrUnauthenticated, reason: errNotSigned,
		},
		{
			name: "no headers parameter",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				r.Header.Set("Signature", `keyId="`+testKeyID+`",created=1714564800,signature="`+sig64+`"`)
				return r
			},
			class: ErrUnauthenticated, reason: errNotSigned,
		},
		{
			name: "created in the future",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				r.Header.Set("Signature", fmt.Sprintf(`keyId="%s",created=%d,headers="(request-target) (created) date",signature="%s"`,
					testKeyID, testTime.Add(time.Hour).Unix(), sig64))
				return r
			},
			class: ErrUnauthenticated, reason: errExpired,
		},
		{
			name: "expired",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				r.Header.Set("Signature", fmt.Sprintf(`keyId="%s",expires=%d,headers="(request-target) (expires) date",signature="%s"`,
					testKeyID, testTime.Add(-time.Hour).Unix(), sig64))
				return r
			},
			class: ErrUnauthenticated, reason: errExpired,
		},
		{
			name: "algorithm Ed25519 is accepted but rsa-sha256 is not",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := manual("GET", "")
				signManually(r, b.priv, testKeyID, "rsa-sha256", "(request-target) Date")
				return r
			},
			class: ErrUnauthenticated, reason: errAlgorithm,
		},
		{
			name: "signature bytes altered",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				h := r.Header.Get("Signature")
				i := strings.Index(h, `signature="`) + len(`signature="`)
				c := byte('A')
				if h[i] == 'A' {
					c = 'B'
				}
				r.Header.Set("Signature", h[:i]+string(c)+h[i+1:])
				return r
			},
			class: ErrUnauthenticated, reason: errBadSignature, resolves: true,
		},
		{
			name: "signature truncated",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				h := r.Header.Get("Signature")
				r.Header.Set("Signature", h[:len(h)-10]+`"`)
				return r
			},
			class: ErrUnauthenticated, reason: errMalformed,
		},
		{
			name: "header mangled: quote removed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), `keyId="`, `keyId=`, 1))
				return r
			},
			class: ErrUnauthenticated, reason: errMalformed,
		},
		{
			name: "header mangled: keyId swapped",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), testKeyID, downKeyID, 1))
				return r
			},
			class: ErrUnauthenticated, reason: errKeyUnreachable, resolves: true,
		},
		{
			name: "header mangled: Digest dropped from the list",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Set("Signature", strings.Replace(r.Header.Get("Signature"), " Digest", "", 1))
				return r
			},
			class: ErrUnauthenticated, reason: errNotSigned,
		},
		{
			name: "path changed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				nr := httptest.NewRequest("POST", "https://b.example/services/anchord/outbox", r.Body)
				nr.Header = r.Header
				return nr
			},
			class: ErrUnauthenticated, reason: errBadSignature, resolves: true,
		},
		{
			name: "method changed",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Method = "PUT"
				return r
			},
			class: ErrUnauthenticated, reason: errBadSignature, resolves: true,
		},
		{
			name: "Date repeated",
			request: func(t *testing.T, b *testBundle) *http.Request {
				r := post(t, b)
				r.Header.Add("Date", r.Header.Get("Date"))
				return r
			},
			class: ErrUnauthenticated, reason: errMalformed,
		},
		{
			name: "body too large",
			request: func(t *testing.T, b *testBundle) *http.Request {
				return b.signed(t, b.signer, "POST", testInbox, strings.Repeat("x", testMaxBody+1))
			},
			class: ErrBodyTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := tt.request(t, b)
			got, err := b.verifier.Verify(r)
			require.ErrorIs(t, err, tt.class)
			require.Equal(t, Verified{}, got)
			for _, other := range []error{ErrUnauthenticated, ErrUnavailable, ErrBodyTooLarge} {
				if other != tt.class {
					require.NotErrorIs(t, err, other)
				}
			}
			if tt.reason != nil {
				require.ErrorIs(t, err, tt.reason)
			}
			if !tt.resolves {
				require.Zero(t, b.resolved.Load(), "key resolved for a request refused on its form")
				require.NotErrorIs(t, err, ErrKeyUnverified, "a refusal of the form is not a key failure")
			} else {
				require.ErrorIs(t, err, ErrKeyUnverified, "every refusal that involves the key is answered alike")
			}
			require.Zero(t, b.verifier.replay.len(), "a refused signature was remembered")
		})
	}
}

func TestVerifyReplay(t *testing.T) {
	t.Parallel()

	t.Run("same request twice", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.signed(t, b.signer, "POST", testInbox, "x")
		again := r.Clone(context.Background())
		again.Body = io.NopCloser(strings.NewReader("x"))

		_, err := b.verifier.Verify(r)
		require.NoError(t, err)
		_, err = b.verifier.Verify(again)
		require.ErrorIs(t, err, ErrUnauthenticated)
		require.ErrorIs(t, err, errReplay)
		// The replay was refused before the key was fetched a second time.
		require.EqualValues(t, 1, b.resolved.Load())
	})

	t.Run("remembered for the whole window", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// Sent with a Date at the far edge of the future skew, replayed when it is at the far
		// edge of the past skew: still refused.
		b.signClock.Set(testTime.Add(MaxClockSkewDefault))
		r := b.signed(t, b.signer, "GET", testOutbox, "")
		again := r.Clone(context.Background())
		_, err := b.verifier.Verify(r)
		require.NoError(t, err)
		b.verifyClock.Set(testTime.Add(2 * MaxClockSkewDefault))
		_, err = b.verifier.Verify(again)
		require.ErrorIs(t, err, errReplay)
		// A moment later Date is stale: refused for that instead.
		b.verifyClock.Set(testTime.Add(2*MaxClockSkewDefault + time.Second))
		_, err = b.verifier.Verify(again)
		require.ErrorIs(t, err, errClockSkew)
	})

	t.Run("concurrent copies: exactly one accepted", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.signed(t, b.signer, "POST", testInbox, "x")
		const n = 16
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range n {
			c := r.Clone(context.Background())
			c.Body = io.NopCloser(strings.NewReader("x"))
			wg.Go(func() {
				if _, err := b.verifier.Verify(c); err == nil {
					ok.Add(1)
				} else if !errors.Is(err, errReplay) {
					t.Errorf("unexpected error: %v", err)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, ok.Load())
	})

	t.Run("full cache refuses as unavailable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		v, err := NewVerifier(VerifierConfig{ResolveKeyFunc: b.resolve, ReplayCacheSize: 2, NowFunc: b.verifyClock.Now})
		require.NoError(t, err)
		for i := range 2 {
			_, err := v.Verify(b.signed(t, b.signer, "POST", testInbox, fmt.Sprint(i)))
			require.NoError(t, err)
		}
		_, err = v.Verify(b.signed(t, b.signer, "POST", testInbox, "2"))
		require.ErrorIs(t, err, ErrUnavailable)
		require.NotErrorIs(t, err, ErrUnauthenticated)
		// Once the first two leave the window there is room again.
		b.verifyClock.Set(testTime.Add(2*MaxClockSkewDefault + time.Second))
		b.signClock.Set(testTime.Add(2*MaxClockSkewDefault + time.Second))
		_, err = v.Verify(b.signed(t, b.signer, "POST", testInbox, "2"))
		require.NoError(t, err)
	})
}
