package activity

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCollectionRoundTrip(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"collection_outbox.json", "collection_outbox_page.json", "collection_followers.json", "collection_followers_page.json"} {
		data := readTestdata(t, file)
		c, err := ParseCollection(data)
		require.NoError(t, err, file)
		out, err := json.Marshal(c)
		require.NoError(t, err)
		require.JSONEq(t, string(data), string(out), file)
	}

	page, err := ParseCollection(readTestdata(t, "collection_outbox_page.json"))
	require.NoError(t, err)
	require.Len(t, page.Members(), 2)
	require.Equal(t, TypeCreate, page.Members()[0].Activity.Type)
	require.NoError(t, page.Members()[0].Activity.Object.AnchorEvent.VerifyURL())

	followers, err := ParseCollection(readTestdata(t, "collection_followers_page.json"))
	require.NoError(t, err)
	require.Equal(t, "did:web:c.example:services:orb", followers.Members()[1].IRI)
}

func TestParseCollectionRejects(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"type":"Follow"}`,
		`{"type":"Collection","totalItems":-2}`,
		`{"type":"Collection","first":"page=true"}`,
		`{"type":"OrderedCollectionPage","orderedItems":[{"type":"Follow"}]}`,
		`{"type":"CollectionPage","items":[1]}`,
	} {
		_, err := ParseCollection([]byte(bad))
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}

func TestPaging(t *testing.T) {
	t.Parallel()
	const a = "https://a.example/services/orb/outbox"
	require.Equal(t, a+"?page=true", PageIRI(a, -1))
	require.Equal(t, a+"?page=true&page-num=3", PageIRI(a, 3))
	require.Equal(t, a+"?x=1&page=true&page-num=0", PageIRI(a+"?x=1", 0))

	tests := []struct {
		total, size, last int
	}{
		{0, 50, -1}, {1, 50, 0}, {50, 50, 0}, {51, 50, 1}, {120, 50, 2}, {100, 0, 1},
	}
	for _, tt := range tests {
		require.Equal(t, tt.last, LastPage(tt.total, tt.size), "total %d size %d", tt.total, tt.size)
	}

	neighbours := []struct {
		page, total, prev, next int
	}{
		{0, 120, -1, 1}, {1, 120, 0, 2}, {2, 120, 1, -1}, {7, 120, 2, -1}, {0, 0, -1, -1}, {3, 0, -1, -1}, {0, 10, -1, -1},
	}
	for _, tt := range neighbours {
		prev, next := PageNeighbours(tt.page, tt.total, 50)
		require.Equal(t, [2]int{tt.prev, tt.next}, [2]int{prev, next}, "page %d of %d", tt.page, tt.total)
	}

	summary := NewCollectionSummary(a, TypeOrderedCollection, 120, 50)
	out, err := json.Marshal(summary)
	require.NoError(t, err)
	require.JSONEq(t, string(readTestdata(t, "collection_outbox.json")), string(out))

	empty := NewCollectionSummary("https://a.example/services/orb/followers", TypeCollection, 0, 50)
	require.Equal(t, "https://a.example/services/orb/followers?page=true", empty.Last)

	page := NewCollectionPage("https://a.example/services/orb/followers", TypeCollection, 0, 2, 50,
		[]*Object{IRIObject("https://b.example/services/orb"), IRIObject("did:web:c.example:services:orb")})
	out, err = json.Marshal(page)
	require.NoError(t, err)
	require.JSONEq(t, string(readTestdata(t, "collection_followers_page.json")), string(out))

	ordered := NewCollectionPage(a, TypeOrderedCollection, 1, 120, 50, []*Object{IRIObject(PublicIRI)})
	require.Equal(t, TypeOrderedCollectionPage, ordered.Type)
	require.Equal(t, a+"?page=true&page-num=0", ordered.Prev)
	require.Equal(t, a+"?page=true&page-num=2", ordered.Next)
	require.Len(t, ordered.OrderedItems, 1)
	require.Empty(t, ordered.Items)
}
