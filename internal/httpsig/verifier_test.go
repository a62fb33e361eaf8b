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
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
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

type testBundle struct {
	priv        ed25519.PrivateKey
	signClock   *anchordtest.Clock
	verifyClock *anchordtest.Clock
	signer      *Signer
	verifier    *Verifier
	resolved    atomic.Int32
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	b := &testBundle{
		priv:        ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)),
		signClock:   clockAt(testTime),
		verifyClock: clockAt(testTime),
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

// clockAt returns a test clock that reads t until the test moves it.
func clockAt(t time.Time) *anchordtest.Clock {
	c := anchordtest.NewClock()
	c.Set(t)
	return c
}
