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
