package opqueue

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// envelopeSeeds are bodies of every shape: what encodeAll writes and what it never does.
var envelopeSeeds = []string{
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":"eyJhIjoxfQ=="}]}`,
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":null}]}`,
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":"eyJhIjoxfQ=="},{"opId":"b","suffix":"t","type":"update","request":"","attempts":0,"history":[]}]}`,
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":"eyJhIjox\nfQ=="}]}`,
	"{\"ops\":[{\"opId\":\"a\",\"suffix\":\"s\",\"type\":\"create\",\"request\":\"eyJhIjox\nfQ==\"}]}",
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":"eyJhIjoxfQ==","attempts":01}]}`,
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":"eyJhIjoxfQ==","attempts":-1}]}`,
	`{"ops":[{"opId":"a","suffix":"s","type":"create","request":"eyJhIjoxfQ=="}]} `,
	`{"ops":[{"opId":"a","suffix":"s","type":"update","request":"eyJhIjoxfQ==","attempts":3,"history":["x","y"]}]}`,
	` { "ops" : [ { "request" : "eyJh\nIjoxfQ==" , "opId" : "\u0061" } ] } `,
	`{"ops":[]}`,
	`{"ops":null}`,
	`{"ops":[{"opId":null}]}`,
	`{"ops":[{"OPID":"a"}]}`,
	`{"ops":[{"opId":"a","opId":"b"}]}`,
	`{"ops":[{"attempts":1.0}]}`,
	`{"ops":[{"attempts":99999999999999999999}]}`,
	`{"ops":[{"request":"not base64!"}]}`,
	`{"ops":[{"history":[1]}]}`,
	`{"ops":[{"extra":true}]}`,
	`{"ops":[1]}`,
	`{"ops":[{"opId":"\ud800"}]}`,
	"{\"ops\":[{\"opId\":\"\xff\"}]}",
	`{"ops":[],"more":1}`,
	`[]`,
	`{`,
	``,
}

func TestDecodeEnvelopeReadsAsEncodingJSON(t *testing.T) {
	t.Parallel()
	plain := []message{
		{OpID: "EiDa", Suffix: "EiAs1", Type: "create", Request: []byte(`{"type":"create"}`)},
		{OpID: "EiDb", Suffix: "EiAs2", Type: "update", Request: []byte("\x00\xff binary"), Attempts: 2, History: []string{"batch failed: timeout", "again"}},
		{OpID: "EiDc", Suffix: "EiAs3", Type: "recover", Request: []byte{}},
	}
	for _, msg := range encodeAll(plain) {
		_, fast := decodeEnvelopeFast(msg.Body)
		require.True(t, fast, "what encodeAll writes of plain text takes the fast path: %s", msg.Body)
		requireSameAsJSON(t, msg.Body)
	}
	// A history with escapes or beyond ASCII is left to encoding/json.
	odd := []message{{OpID: "EiDd", Suffix: "EiAs4", Type: "update", Request: []byte("{}"), History: []string{"failed: \"quoted\"", "ünïcode", "<&>"}}}
	for _, msg := range encodeAll(odd) {
		_, fast := decodeEnvelopeFast(msg.Body)
		require.False(t, fast)
		requireSameAsJSON(t, msg.Body)
	}
	for _, s := range envelopeSeeds {
		requireSameAsJSON(t, []byte(s))
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) { requireSameAsJSON(t, body) })
}

func requireSameAsJSON(t *testing.T, body []byte) {
	t.Helper()
	var want envelope
	wantErr := json.Unmarshal(body, &want)
	got, err := decodeEnvelope(body)
	require.Equal(t, wantErr, err, "%q", body)
	require.Equal(t, want, got, "%q", body)
}

// BenchmarkDecodeEnvelope reads a full message (groupMaxOps operations of 1 KiB) the way the
// consumer did before (json) and does now (decode).
func BenchmarkDecodeEnvelope(b *testing.B) {
	ms := make([]message, groupMaxOps)
	for i := range ms {
		req := []byte(`{"type":"create","suffixData":{"deltaHash":"EiB`)
		for len(req) < 1024 {
			req = append(req, 'x')
		}
		ms[i] = message{OpID: "EiDopid" + string(rune('a'+i%26)), Suffix: "EiAsuffix", Type: "create", Request: req}
	}
	body := encodeAll(ms)[0].Body
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			var e envelope
			if err := json.Unmarshal(body, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeEnvelope(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
