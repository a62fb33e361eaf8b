package activity

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDataURIRoundTrip(t *testing.T) {
	t.Parallel()
	contents := [][]byte{
		[]byte(`{"linkset":[{"anchor":"hl:x","item":[{"href":"did:orb:uAAA:a b,c?d#e&f+g"}]}]}`),
		{},
		bytes.Repeat([]byte("0123456789"), 10000),
	}
	for _, mediaType := range []string{MediaTypeGzipBase64, MediaTypeJSON} {
		for _, content := range contents {
			uri, err := NewDataURI(content, mediaType)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(uri, "data:"+mediaType+","))
			got, err := DecodeDataURI(uri, 0)
			require.NoError(t, err)
			require.Equal(t, string(content), string(got))
		}
	}
	// Orb's JSON data URIs are query-escaped: a space is '+', a comma %2C.
	uri, err := NewDataURI([]byte(`{"a":"b c,d"}`), MediaTypeJSON)
	require.NoError(t, err)
	require.Equal(t, "data:application/json,%7B%22a%22%3A%22b+c%2Cd%22%7D", uri)
}

func gzipBase64(t *testing.T, content []byte) string {
	t.Helper()
	var buf bytes.Buffer
	// BestSpeed: compressing the 64 MiB bomb at BestCompression took 40 s of the race build on a
	// busy machine, BestSpeed 6 s, and it still makes the bomb about 80 KB.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	require.NoError(t, err)
	_, err = zw.Write(content)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestDecodeDataURIRejects(t *testing.T) {
	t.Parallel()
	bomb := "data:application/gzip;base64," + gzipBase64(t, make([]byte, 64<<20))
	tests := []struct {
		name     string
		uri      string
		max      int
		want     string
		tooLarge bool
	}{
		{"not data", "https://a.example/cas/x", 0, "not a data URI", false},
		{"no comma", "data:application/json", 0, "no content", false},
		{"no media type", "data:,abc", 0, "media type not specified", false},
		{"other media type", "data:text/plain,abc", 0, `media type "text/plain" not supported`, false},
		{"base64 without gzip marker", "data:application/gzip,abc", 0, "not supported", false},
		{"bad base64", "data:application/gzip;base64,!!!!", 0, "base64", false},
		{"not gzip", "data:application/gzip;base64," + base64.StdEncoding.EncodeToString([]byte("plain text")), 0, "gzip", false},
		{"truncated gzip", "data:application/gzip;base64," + gzipBase64(t, []byte("hello world"))[:20], 0, "gzip", false},
		{"bad escape", "data:application/json,%zz", 0, "escape", false},
		{"gzip bomb", bomb, 0, "decompresses past", true},
		{"gzip past a small bound", "data:application/gzip;base64," + gzipBase64(t, []byte("hello world")), 5, "decompresses past 5", true},
		{"json past a small bound", "data:application/json,hello+world", 5, "more than 5", true},
		{"encoded text too long", "data:application/gzip;base64," + strings.Repeat("A", 4000), 100, "data URI of", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeDataURI(tt.uri, tt.max)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, got)
			if tt.tooLarge {
				require.ErrorIs(t, err, ErrTooLarge)
			}
		})
	}
	_, err := NewDataURI([]byte("x"), "text/plain")
	require.ErrorIs(t, err, ErrInvalid)
}

func TestDecodeDataURIIncompressibleAtTheBound(t *testing.T) {
	t.Parallel()
	// Incompressible content of exactly the bound must still decode: its gzip is a little
	// larger than the content.
	content := testIncompressible(1 << 20)
	uri, err := NewDataURI(content, MediaTypeGzipBase64)
	require.NoError(t, err)
	got, err := DecodeDataURI(uri, len(content))
	require.NoError(t, err)
	require.Equal(t, content, got)
}

func testIncompressible(n int) []byte {
	out := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = byte(x)
	}
	return out
}
