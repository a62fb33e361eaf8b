package activity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func addTestdataSeeds(f *testing.F, prefix string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", prefix+"*.json"))
	require.NoError(f, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
}

// FuzzParse: Parse never panics, and what it accepts marshals to a text it accepts again and
// that marshals the same.
func FuzzParse(f *testing.F) {
	addTestdataSeeds(f, "")
	f.Add([]byte(`{"id":"https://b.example/a/1","type":["Follow"],"actor":"did:web:b.example","object":{"type":"Note"}}`))
	f.Add([]byte(`{"type":"Announce","id":"https://b.example/a","actor":"https://b.example/s","object":{"type":"OrderedCollection","orderedItems":[{"type":"Like","object":"x:y"}]}}`))
	f.Add([]byte(`{"id":"https://b.example/a/2","type":"Accept","actor":"https://b.example/s","object":"https://a.example/a/1","result":{"type":"AnchorReceipt","attachment":[{"proof":{}}],"log":{"origin":"b.example/log","index":7}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		out, err := json.Marshal(a)
		require.NoError(t, err)
		again, err := Parse(out)
		require.NoError(t, err, "re-parse of %s", out)
		out2, err := json.Marshal(again)
		require.NoError(t, err)
		require.JSONEq(t, string(out), string(out2))
		for _, o := range []*Object{a.Object, a.Result} {
			if o != nil && o.AnchorEvent != nil {
				_ = o.AnchorEvent.VerifyURL()
			}
		}
	})
}

// FuzzParseLinkset: never panics; an accepted linkset survives a canonical round trip, and
// validating or decoding its first link never panics.
func FuzzParseLinkset(f *testing.F) {
	var offer struct {
		Object json.RawMessage `json:"object"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "offer.json"))
	require.NoError(f, err)
	require.NoError(f, json.Unmarshal(data, &offer))
	f.Add([]byte(offer.Object))
	f.Add([]byte(`{"linkset":[{"anchor":"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ","author":"https://a.example/s","profile":"https://w3id.org/orb#v0","original":{"href":"data:application/json,%7B%7D","type":"application/linkset+json"}}]}`))
	f.Add([]byte(`{"linkset":[{"anchor":"hl:x","item":[{"href":"did:orb:uAAA:x","previous":["hl:y"]}],"up":["hl:z"],"via":[{"href":"hl:v"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ls, err := ParseLinkset(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		canon, err := ls.Canonical()
		require.NoError(t, err)
		again, err := ParseLinkset(canon)
		require.NoError(t, err, "re-parse of %s", canon)
		canon2, err := again.Canonical()
		require.NoError(t, err)
		require.Equal(t, string(canon), string(canon2))
		_ = ls.Link().Validate()
		_, _ = ls.Link().AnchorContent()
	})
}

// FuzzParseHashlink: never panics; an accepted hashlink rewritten by String parses to the same.
func FuzzParseHashlink(f *testing.F) {
	f.Add(helloHashlink)
	f.Add(helloHashlink + ":" + helloMetadata)
	f.Add("hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ:uoQ-BeEVodHRwczovL2EuZXhhbXBsZS9jYXMvdUVpQXplc1NtckM3YlhCZUdKNE1EUHlMZUFkeENhZXVUelVCSmQwS0pVcEJSWGc")
	f.Add("hl:u:u")
	f.Add("hl:zQm")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHashlink(s)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		again, err := ParseHashlink(h.String())
		require.NoError(t, err)
		require.Equal(t, h, again)
		require.True(t, strings.HasPrefix(s, h.Anchor()))
	})
}

// FuzzDecodeDataURI: never panics and never returns more than the bound; accepted content
// re-encodes and decodes to itself.
func FuzzDecodeDataURI(f *testing.F) {
	const bound = 1 << 16
	for _, content := range []string{`{"linkset":[]}`, "", "a b,c%"} {
		for _, mt := range []string{MediaTypeGzipBase64, MediaTypeJSON} {
			uri, err := NewDataURI([]byte(content), mt)
			require.NoError(f, err)
			f.Add(uri)
		}
	}
	f.Add("data:application/gzip;base64,H4sIAAAAAAAA/wAAAP//AQAA//8AAAAAAAAAAA==")
	f.Add("data:,")
	f.Fuzz(func(t *testing.T, uri string) {
		content, err := DecodeDataURI(uri, bound)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		require.LessOrEqual(t, len(content), bound)
		mediaType, _, _ := strings.Cut(strings.TrimPrefix(uri, "data:"), ",")
		again, err := NewDataURI(content, mediaType)
		require.NoError(t, err)
		decoded, err := DecodeDataURI(again, bound)
		require.NoError(t, err)
		require.Equal(t, string(content), string(decoded))
	})
}
