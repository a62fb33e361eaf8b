package activity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefsForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json string
		want Refs
	}{
		{`[{"href":"https://a.example/s"}]`, Refs{{HRef: "https://a.example/s"}}},
		{`"https://a.example/s"`, Refs{{HRef: "https://a.example/s"}}},
		{`{"href":"data:x","type":"application/linkset+json"}`, Refs{{HRef: "data:x", Type: MediaTypeLinkset}}},
		{`["https://a.example/s",{"href":"https://b.example/s"}]`, Refs{{HRef: "https://a.example/s"}, {HRef: "https://b.example/s"}}},
		{`null`, nil},
		{`[]`, Refs{}},
	}
	for _, tt := range tests {
		var got Refs
		require.NoError(t, json.Unmarshal([]byte(tt.json), &got), tt.json)
		require.Equal(t, tt.want, got, tt.json)
	}
	for _, bad := range []string{`5`, `[5]`, `[null]`, `{"type":"x"}`, `[["x"]]`, `true`} {
		var got Refs
		require.Error(t, json.Unmarshal([]byte(bad), &got), bad)
	}
	out, err := json.Marshal(Refs{{HRef: "https://a.example/s"}})
	require.NoError(t, err)
	require.Equal(t, `[{"href":"https://a.example/s"}]`, string(out))
}

func TestParseLinkset(t *testing.T) {
	t.Parallel()
	var offer struct {
		Object json.RawMessage `json:"object"`
	}
	require.NoError(t, json.Unmarshal(readTestdata(t, "offer.json"), &offer))
	ls, err := ParseLinkset(offer.Object)
	require.NoError(t, err)
	require.NoError(t, ls.Link().Validate())

	for _, bad := range []string{`{}`, `{"linkset":[]}`, `{"linkset":{}}`, `[]`, `{"linkset":[{"anchor":""}]}`} {
		_, err := ParseLinkset([]byte(bad))
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
	big := `{"linkset":[{"anchor":"hl:x","item":[` + strings.TrimSuffix(strings.Repeat(`{"href":"did:orb:uAAA:x"},`, MaxItemsDefault+5), ",") + `]}]}`
	_, err = ParseLinkset([]byte(big))
	require.NoError(t, err, "an original lists one item per operation, past the activity item bound")
	_, err = ParseLinksetWithLimits([]byte(big), Limits{MaxItems: MaxItemsDefault})
	require.ErrorIs(t, err, ErrTooLarge)
	var nilSet *Linkset
	require.Nil(t, nilSet.Link())
}

func TestLinkValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(l *Link)
		want   string
	}{
		{"anchor not a hashlink", func(l *Link) { l.Anchor = "https://a.example/x" }, "anchor"},
		{"anchor with metadata", func(l *Link) { l.Anchor += ":" + helloMetadata }, "carries metadata"},
		{"anchor of other content", func(l *Link) { l.Anchor = helloHashlink }, "does not match"},
		{"no author", func(l *Link) { l.Author = nil }, "author"},
		{"no profile", func(l *Link) { l.Profile = nil }, "profile"},
		{"original not decodable", func(l *Link) { l.Original[0].HRef = "data:application/gzip;base64,AAAA" }, "original"},
		{"related not decodable", func(l *Link) { l.Related[0].HRef = "data:text/plain,x" }, "related"},
		{"replies not decodable", func(l *Link) { l.Replies[0].HRef = "https://a.example/vc" }, "replies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			link := testAnchorLink(t, MediaTypeGzipBase64)
			tt.mutate(link)
			err := link.Validate()
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
		})
	}
	var nilLink *Link
	require.ErrorIs(t, nilLink.Validate(), ErrInvalid)

	// Without original, related and replies (a reference-only link), the rest still counts.
	link := testAnchorLink(t, MediaTypeJSON)
	link.Original, link.Related, link.Replies = nil, nil, nil
	require.NoError(t, link.Validate())
}

func TestLinksetCanonicalMatchesCreateURL(t *testing.T) {
	t.Parallel()
	a, err := Parse(readTestdata(t, "create.json"))
	require.NoError(t, err)
	ev := a.Object.AnchorEvent
	canonical, err := ev.Object.Canonical()
	require.NoError(t, err)
	h, err := ev.Hashlink()
	require.NoError(t, err)
	require.NoError(t, h.Verify(canonical))
	require.Equal(t, []string{"https://a.example/cas/" + h.ResourceHash()}, h.Links)
}
