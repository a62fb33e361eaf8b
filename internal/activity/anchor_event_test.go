package activity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAnchorEventVerifyURL(t *testing.T) {
	t.Parallel()
	link := testAnchorLink(t, MediaTypeGzipBase64)
	ls := &Linkset{Linkset: []Link{*link}}
	lsJCS, err := ls.Canonical()
	require.NoError(t, err)
	url := NewHashlink(lsJCS, "https://a.example/cas/x")

	built := NewAnchorEvent(url, ls)
	require.NoError(t, built.VerifyURL())
	require.NoError(t, built.validate())

	// The hash is over the object as the sender wrote it: reordered members and whitespace do
	// not matter (JCS), a member this package does not model does.
	raw, err := json.Marshal(built)
	require.NoError(t, err)
	var ev AnchorEvent
	require.NoError(t, json.Unmarshal(raw, &ev))
	require.NoError(t, ev.VerifyURL())

	withExtra := strings.Replace(string(raw), `"linkset":[{`, `"linkset":[{"extra":"x",`, 1)
	require.NoError(t, json.Unmarshal([]byte(withExtra), &ev))
	require.ErrorIs(t, ev.VerifyURL(), ErrInvalid)

	// Bound to the same URL, the sender's extra member hashes in.
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(withExtra), &doc))
	objectJSON, err := json.Marshal(doc["object"])
	require.NoError(t, err)
	objectCanonical, err := canonical(objectJSON)
	require.NoError(t, err)
	doc["url"] = NewHashlink(objectCanonical)
	rebound, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(rebound, &ev))
	require.NoError(t, ev.VerifyURL())

	urlOnly := NewAnchorEvent(url, nil)
	require.NoError(t, urlOnly.VerifyURL())
	urlOnly.URL = append(urlOnly.URL, url)
	require.ErrorIs(t, urlOnly.VerifyURL(), ErrInvalid)
}

func TestAnchorReceiptValidate(t *testing.T) {
	t.Parallel()
	r := &AnchorReceipt{Type: TypeAnchorReceipt, InReplyTo: helloHashlink, Attachment: []json.RawMessage{json.RawMessage(`{"proof":{}}`)}}
	require.NoError(t, r.validate())
	r.Type = TypeAnchorEvent
	require.ErrorIs(t, r.validate(), ErrInvalid)
}

// The log extension reaches the origin as sent, and a receipt with a log the origin cannot
// use is refused like any other invalid receipt.
func TestAnchorReceiptLog(t *testing.T) {
	t.Parallel()
	accept := func(log string) []byte {
		return []byte(`{"@context":"https://www.w3.org/ns/activitystreams","id":"https://b.example/activities/1","type":"Accept",
			"actor":"https://b.example/services/anchord","to":"https://a.example/services/anchord","object":"https://a.example/activities/1",
			"result":{"type":"AnchorReceipt","inReplyTo":"` + helloHashlink + `","attachment":[{"proof":{}}]` + log + `}}`)
	}
	a, err := Parse(accept(`,"log":{"origin":"b.example/log","index":42}`))
	require.NoError(t, err)
	require.Equal(t, &ReceiptLog{Origin: "b.example/log", Index: 42}, a.Result.AnchorReceipt.Log)
	out, err := json.Marshal(a)
	require.NoError(t, err)
	require.Contains(t, string(out), `"log":{"origin":"b.example/log","index":42}`)

	a, err = Parse(accept(""))
	require.NoError(t, err)
	require.Nil(t, a.Result.AnchorReceipt.Log, "Orb's receipt has no log")

	for name, log := range map[string]string{
		"no origin":      `,"log":{"index":1}`,
		"spaced origin":  `,"log":{"origin":"b.example /log","index":1}`,
		"negative index": `,"log":{"origin":"b.example/log","index":-1}`,
		"huge index":     `,"log":{"origin":"b.example/log","index":9223372036854775808}`,
		"not an object":  `,"log":"b.example/log"`,
	} {
		_, err := Parse(accept(log))
		require.ErrorIs(t, err, ErrInvalid, name)
	}
}
