package httpsig

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
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

const (
	testKeyID   = "https://a.example/services/anchord/keys/main-key"
	testOwner   = "https://a.example/services/anchord"
	downKeyID   = "https://down.example/services/anchord/keys/main-key"
	shortKeyID  = "https://short.example/services/anchord/keys/main-key"
	testInbox   = "https://b.example/services/anchord/inbox"
	testOutbox  = "https://b.example/services/anchord/outbox?page=true&page-num=0"
	testMaxBody = 1024
)

var testTime = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// fakeClock is a settable clock shared by a signer or verifier and its test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

type testBundle struct {
	priv        ed25519.PrivateKey
	signClock   *fakeClock
	verifyClock *fakeClock
	signer      *Signer
	verifier    *Verifier
	resolved    atomic.Int32
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	b := &testBundle{
		priv:        ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)),
		signClock:   &fakeClock{t: testTime},
		verifyClock: &fakeClock{t: testTime},
	}
	var err error
	b.signer, err = NewSigner(SignerConfig{KeyID: testKeyID, PrivateKey: b.priv, NowFunc: b.signClock.Now})
	require.NoError(t, err)
	b.verifier, err = NewVerifier(VerifierConfig{
		ResolveKeyFunc: b.resolve,
		MaxBodyBytes:   testMaxBody,
		NowFunc:        b.verifyClock.Now,
	})
	require.NoError(t, err)
	return b
}

// resolve knows testKeyID, fails transiently for downKeyID, returns a truncated key for
// shortKeyID and knows nothing else.
func (b *testBundle) resolve(_ context.Context, keyID string) (PublicKey, error) {
	b.resolved.Add(1)
	switch keyID {
	case testKeyID:
		return PublicKey{Key: b.priv.Public().(ed25519.PublicKey), Owner: testOwner}, nil
	case downKeyID:
		return PublicKey{}, errors.New("GET key: connection refused")
	case shortKeyID:
		return PublicKey{Key: b.priv.Public().(ed25519.PublicKey)[:31], Owner: testOwner}, nil
	default:
		return PublicKey{}, fmt.Errorf("GET %s: 404: %w", keyID, ErrKeyNotFound)
	}
}

// signerFor returns a signer with b's clock and the given key id and key.
func (b *testBundle) signerFor(t testing.TB, keyID string, priv ed25519.PrivateKey) *Signer {
	t.Helper()
	s, err := NewSigner(SignerConfig{KeyID: keyID, PrivateKey: priv, NowFunc: b.signClock.Now})
	require.NoError(t, err)
	return s
}

// serverRequest turns a signed client request into what a handler receives.
func serverRequest(t testing.TB, r *http.Request) *http.Request {
	t.Helper()
	var body io.Reader
	if r.Body != nil {
		data, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		body = bytes.NewReader(data)
	}
	sr := httptest.NewRequest(r.Method, r.URL.String(), body)
	sr.Header = r.Header.Clone()
	return sr
}

func (b *testBundle) signed(t testing.TB, s *Signer, method, url, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	require.NoError(t, s.Sign(r))
	return serverRequest(t, r)
}

// signManually signs r the way another implementation would, building the signing string here
// rather than with the package's builder.
func signManually(r *http.Request, priv ed25519.PrivateKey, keyID, algorithm, headers string) {
	var lines []string
	for _, name := range strings.Fields(headers) {
		if name == "(request-target)" {
			lines = append(lines, "(request-target): "+strings.ToLower(r.Method)+" "+r.URL.RequestURI())
			continue
		}
		lines = append(lines, strings.ToLower(name)+": "+r.Header.Get(name))
	}
	sig := ed25519.Sign(priv, []byte(strings.Join(lines, "\n")))
	alg := ""
	if algorithm != "" {
		alg = `algorithm="` + algorithm + `",`
	}
	r.Header.Set("Signature", `keyId="`+keyID+`",`+alg+`headers="`+headers+`",signature="`+
		base64.StdEncoding.EncodeToString(sig)+`"`)
}

func TestVerifyRoundTrip(t *testing.T) {
	t.Parallel()

	tests := []struct {
		method, url, body string
	}{
		{"GET", testOutbox, ""},
		{"GET", "https://b.example/services/anchord/followers", ""},
		{"POST", testInbox, `{"type":"Follow","actor":"https://a.example/services/anchord"}`},
		{"POST", testInbox, ""},
		{"PUT", "https://b.example/x%2Fy/z?q=a%20b", "data"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url+" "+fmt.Sprint(len(tt.body)), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := b.signed(t, b.signer, tt.method, tt.url, tt.body)
			got, err := b.verifier.Verify(r)
			require.NoError(t, err)
			require.Equal(t, Verified{KeyID: testKeyID, Owner: testOwner}, got)
			body, err := io.ReadAll(r.Body)
			require.NoError(t, err)
			require.Equal(t, tt.body, string(body))
		})
	}
}

func TestVerifyAcceptsClockSkewWithinBounds(t *testing.T) {
	t.Parallel()

	for _, offset := range []time.Duration{-MaxClockSkewDefault, -time.Minute, time.Minute, MaxClockSkewDefault} {
		t.Run(offset.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.verifyClock.Set(testTime.Add(offset))
			_, err := b.verifier.Verify(b.signed(t, b.signer, "POST", testInbox, "x"))
			require.NoError(t, err)
		})
	}
}

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
			class: ErrUnavailable, resolves: true,
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
			class: ErrUnavailable, resolves: true,
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

func TestVerifyAlgorithms(t *testing.T) {
	t.Parallel()

	for _, alg := range []string{"Sign", "sign", "ed25519", "Ed25519", "hs2019", ""} {
		t.Run("alg="+alg, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := httptest.NewRequest("GET", testOutbox, nil)
			r.Header.Set("Date", testTime.Format(http.TimeFormat))
			signManually(r, b.priv, testKeyID, alg, "(request-target) date")
			_, err := b.verifier.Verify(r)
			require.NoError(t, err)
		})
	}
}

// Orb's requests, built exactly as they were seen on the wire.
func TestVerifyOrbShapes(t *testing.T) {
	t.Parallel()

	// Orb's date format and a Date a few seconds before our clock.
	orbDate := testTime.Add(-3*time.Second).Format("Mon, 02 Jan 2006 15:04:05") + " GMT"

	t.Run("POST with SHA-512 digest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := `{"@context":"https://www.w3.org/ns/activitystreams","type":"Accept"}`
		sum := sha512.Sum512([]byte(body))
		digest := "SHA-512=" + base64.StdEncoding.EncodeToString(sum[:])
		str := "(request-target): post /services/anchord/inbox\ndate: " + orbDate + "\ndigest: " + digest
		r := httptest.NewRequest("POST", testInbox, strings.NewReader(body))
		r.Header.Set("Date", orbDate)
		r.Header.Set("Digest", digest)
		r.Header.Set("Content-Type", "application/activity+json")
		r.Header.Set("Signature", `keyId="`+testKeyID+`",algorithm="Sign",headers="(request-target) Date Digest",signature="`+
			base64.StdEncoding.EncodeToString(ed25519.Sign(b.priv, []byte(str)))+`"`)

		got, err := b.verifier.Verify(r)
		require.NoError(t, err)
		require.Equal(t, testOwner, got.Owner)
		read, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Equal(t, body, string(read))
	})

	t.Run("GET with an empty unsigned Digest", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		str := "(request-target): get /services/anchord/outbox?page=true&page-num=0\ndate: " + orbDate
		r := httptest.NewRequest("GET", testOutbox, nil)
		r.Header.Set("Date", orbDate)
		r.Header["Digest"] = []string{""}
		r.Header.Set("Signature", `keyId="`+testKeyID+`",algorithm="Sign",headers="(request-target) Date",signature="`+
			base64.StdEncoding.EncodeToString(ed25519.Sign(b.priv, []byte(str)))+`"`)

		got, err := b.verifier.Verify(r)
		require.NoError(t, err)
		require.Equal(t, Verified{KeyID: testKeyID, Owner: testOwner}, got)
	})
}

// TestVerifyOverHTTP sends signed requests through a real client and server, so that the
// request-target the server sees is the one the client wrote.
func TestVerifyOverHTTP(t *testing.T) {
	t.Parallel()

	b := setup(t)
	type seen struct {
		owner, body string
		err         error
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.StripPrefix("/services", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := b.verifier.Verify(r)
		body, rerr := io.ReadAll(r.Body)
		got <- seen{owner: v.Owner, body: string(body), err: errors.Join(err, rerr)}
	})))
	t.Cleanup(srv.Close)
	client := srv.Client()
	t.Cleanup(client.CloseIdleConnections)

	for _, tt := range []struct{ method, path, body string }{
		{"POST", "/services/anchord/inbox", `{"type":"Offer"}`},
		{"GET", "/services/anchord/outbox?page=true&page-num=3", ""},
		{"GET", "/services/a%2Fb%20c/inbox?x=%2F", ""},
	} {
		var rd io.Reader
		if tt.body != "" {
			rd = bytes.NewReader([]byte(tt.body))
		}
		r, err := http.NewRequest(tt.method, srv.URL+tt.path, rd)
		require.NoError(t, err)
		require.NoError(t, b.signer.Sign(r))
		resp, err := client.Do(r)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		s := <-got
		require.NoError(t, s.err, tt.path)
		require.Equal(t, testOwner, s.owner)
		require.Equal(t, tt.body, s.body)
	}
}

func TestNewVerifier(t *testing.T) {
	t.Parallel()

	_, err := NewVerifier(VerifierConfig{})
	require.Error(t, err)

	v, err := NewVerifier(VerifierConfig{ResolveKeyFunc: func(context.Context, string) (PublicKey, error) {
		return PublicKey{}, ErrKeyNotFound
	}})
	require.NoError(t, err)
	require.Equal(t, MaxClockSkewDefault, v.cfg.MaxClockSkew)
	require.EqualValues(t, MaxBodyBytesDefault, v.cfg.MaxBodyBytes)
	require.Equal(t, ReplayCacheSizeDefault, v.cfg.ReplayCacheSize)
	require.Equal(t, 2*MaxClockSkewDefault, v.replay.ttl)
}

func TestVerifyResolverWithoutOwner(t *testing.T) {
	t.Parallel()

	b := setup(t)
	v, err := NewVerifier(VerifierConfig{
		ResolveKeyFunc: func(context.Context, string) (PublicKey, error) {
			return PublicKey{Key: b.priv.Public().(ed25519.PublicKey)}, nil
		},
		NowFunc: b.verifyClock.Now,
	})
	require.NoError(t, err)
	_, err = v.Verify(b.signed(t, b.signer, "GET", testOutbox, ""))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrUnauthenticated)
	require.NotErrorIs(t, err, ErrUnavailable)
}

func BenchmarkVerify(b *testing.B) {
	tb := setup(b)
	v, err := NewVerifier(VerifierConfig{ResolveKeyFunc: tb.resolve, ReplayCacheSize: b.N + 1, NowFunc: tb.verifyClock.Now})
	require.NoError(b, err)
	// Distinct bodies give distinct signatures, so none is a replay.
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		reqs[i] = tb.signed(b, tb.signer, "POST", testInbox, fmt.Sprintf("%01024d", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.Verify(reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
}
