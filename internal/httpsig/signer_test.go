package httpsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var orbSignature = regexp.MustCompile(`^keyId="([^"]+)",algorithm="Sign",headers="([^"]+)",signature="([A-Za-z0-9+/]{86}==)"$`)

func TestSignShape(t *testing.T) {
	t.Parallel()

	t.Run("POST", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		body := `{"type":"Follow"}`
		r, err := http.NewRequest("POST", testInbox, strings.NewReader(body))
		require.NoError(t, err)
		require.NoError(t, b.signer.Sign(r))

		date := r.Header.Get("Date")
		require.Equal(t, "Wed, 01 May 2024 12:00:00 GMT", date)
		sum := sha256.Sum256([]byte(body))
		digest := "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])
		require.Equal(t, digest, r.Header.Get("Digest"))

		m := orbSignature.FindStringSubmatch(r.Header.Get("Signature"))
		require.NotNil(t, m, r.Header.Get("Signature"))
		require.Equal(t, testKeyID, m[1])
		require.Equal(t, "(request-target) Date Digest", m[2])
		sig, err := base64.StdEncoding.DecodeString(m[3])
		require.NoError(t, err)
		str := "(request-target): post /services/anchord/inbox\ndate: " + date + "\ndigest: " + digest
		require.True(t, ed25519.Verify(b.priv.Public().(ed25519.PublicKey), []byte(str), sig))

		// The body is still there to send.
		sent, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Equal(t, body, string(sent))
	})

	t.Run("GET", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r, err := http.NewRequest("GET", testOutbox, nil)
		require.NoError(t, err)
		r.Header.Set("Digest", "SHA-256=stale")
		require.NoError(t, b.signer.Sign(r))

		require.Empty(t, r.Header.Values("Digest"))
		m := orbSignature.FindStringSubmatch(r.Header.Get("Signature"))
		require.NotNil(t, m, r.Header.Get("Signature"))
		require.Equal(t, "(request-target) Date", m[2])
		sig, err := base64.StdEncoding.DecodeString(m[3])
		require.NoError(t, err)
		str := "(request-target): get /services/anchord/outbox?page=true&page-num=0\ndate: " + r.Header.Get("Date")
		require.True(t, ed25519.Verify(b.priv.Public().(ed25519.PublicKey), []byte(str), sig))
	})
}

func TestSignBody(t *testing.T) {
	t.Parallel()

	t.Run("body without GetBody is replaced", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r, err := http.NewRequest("POST", testInbox, io.NopCloser(strings.NewReader("abc")))
		require.NoError(t, err)
		require.Nil(t, r.GetBody)
		require.NoError(t, b.signer.Sign(r))
		require.Equal(t, digestSHA256([]byte("abc")), r.Header.Get("Digest"))
		require.EqualValues(t, 3, r.ContentLength)
		for range 2 {
			rc, err := r.GetBody()
			require.NoError(t, err)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.Equal(t, "abc", string(data))
		}
		data, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Equal(t, "abc", string(data))
	})

	t.Run("empty body signs like a GET", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r, err := http.NewRequest("POST", testInbox, io.NopCloser(strings.NewReader("")))
		require.NoError(t, err)
		require.NoError(t, b.signer.Sign(r))
		require.Equal(t, http.NoBody, r.Body)
		require.Empty(t, r.Header.Values("Digest"))
		require.Contains(t, r.Header.Get("Signature"), `headers="(request-target) Date"`)
	})

	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		s, err := NewSigner(SignerConfig{KeyID: testKeyID, PrivateKey: ed25519.NewKeyFromSeed(make([]byte, 32)), MaxBodyBytes: 4})
		require.NoError(t, err)
		r, err := http.NewRequest("POST", testInbox, bytes.NewReader([]byte("12345")))
		require.NoError(t, err)
		require.ErrorIs(t, s.Sign(r), ErrBodyTooLarge)
		require.Empty(t, r.Header.Values("Signature"))
	})
}

func TestNewSigner(t *testing.T) {
	t.Parallel()

	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	tests := []struct {
		name string
		cfg  SignerConfig
	}{
		{"no key id", SignerConfig{PrivateKey: priv}},
		{"quote in key id", SignerConfig{KeyID: `a"b`, PrivateKey: priv}},
		{"newline in key id", SignerConfig{KeyID: "a\nb", PrivateKey: priv}},
		{"key id too long", SignerConfig{KeyID: strings.Repeat("k", maxKeyIDBytes+1), PrivateKey: priv}},
		{"no private key", SignerConfig{KeyID: testKeyID}},
		{"short private key", SignerConfig{KeyID: testKeyID, PrivateKey: priv[:32]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewSigner(tt.cfg)
			require.Error(t, err)
		})
	}
	s, err := NewSigner(SignerConfig{KeyID: testKeyID, PrivateKey: priv})
	require.NoError(t, err)
	require.EqualValues(t, MaxBodyBytesDefault, s.cfg.MaxBodyBytes)
}

func BenchmarkSign(b *testing.B) {
	tb := setup(b)
	body := bytes.Repeat([]byte("x"), 1024)
	b.ReportAllocs()
	for b.Loop() {
		r, err := http.NewRequest("POST", testInbox, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.signer.Sign(r); err != nil {
			b.Fatal(err)
		}
	}
}
