package httpsig

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckDigest(t *testing.T) {
	t.Parallel()

	body := []byte(`{"type":"Follow"}`)
	s256 := sha256.Sum256(body)
	s512 := sha512.Sum512(body)
	b256 := base64.StdEncoding.EncodeToString(s256[:])
	b512 := base64.StdEncoding.EncodeToString(s512[:])
	other := sha256.Sum256([]byte("other"))
	bOther := base64.StdEncoding.EncodeToString(other[:])

	tests := []struct {
		name    string
		value   string
		wantErr error
	}{
		{"SHA-256", "SHA-256=" + b256, nil},
		{"SHA-512 as Orb sends", "SHA-512=" + b512, nil},
		{"lower-case algorithm", "sha-256=" + b256, nil},
		{"both", "SHA-256=" + b256 + ", SHA-512=" + b512, nil},
		{"unknown algorithm beside a known one", "MD5=xyz, SHA-256=" + b256, nil},
		{"what Sign writes", digestSHA256(body), nil},
		{"mismatch", "SHA-256=" + bOther, errDigest},
		{"one of two mismatches", "SHA-512=" + b512 + ",SHA-256=" + bOther, errDigest},
		{"wrong length", "SHA-256=" + b512, errDigest},
		{"only unknown algorithms", "MD5=xyz", errDigestMalformed},
		{"not base64", "SHA-256=@@@", errDigestMalformed},
		{"no equals", "SHA-256", errDigestMalformed},
		{"empty value", "SHA-256=", errDigestMalformed},
		{"empty entry", "SHA-256=" + b256 + ",", errDigestMalformed},
		{"too many entries", strings.Repeat("X=1,", maxDigestEntries) + "SHA-256=" + b256, errDigestMalformed},
		{"too long", "SHA-256=" + b256 + ",X=" + strings.Repeat("a", maxDigestHeaderBytes), errDigestMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkDigest(tt.value, body)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

func TestReadBody(t *testing.T) {
	t.Parallel()

	t.Run("restores the body", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("POST", "/inbox", strings.NewReader("hello"))
		body, err := readBody(r, 5)
		require.NoError(t, err)
		require.Equal(t, "hello", string(body))
		again, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		require.Equal(t, "hello", string(again))
	})
	t.Run("no body", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("GET", "/inbox", nil)
		body, err := readBody(r, 5)
		require.NoError(t, err)
		require.Nil(t, body)
	})
	t.Run("too large", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("POST", "/inbox", bytes.NewReader(make([]byte, 6)))
		_, err := readBody(r, 5)
		require.ErrorIs(t, err, ErrBodyTooLarge)
	})
	t.Run("read error", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("POST", "/inbox", nil)
		r.Body = io.NopCloser(io.MultiReader(strings.NewReader("ab"), errReader{}))
		_, err := readBody(r, 5)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		require.NotErrorIs(t, err, ErrBodyTooLarge)
	})
	t.Run("NoBody", func(t *testing.T) {
		t.Parallel()
		r := httptest.NewRequest("POST", "/inbox", nil)
		r.Body = http.NoBody
		body, err := readBody(r, 5)
		require.NoError(t, err)
		require.Nil(t, body)
	})
}

// errReader fails like a client that hung up mid-body.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
