package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// casGet reads a file from a domain's /cas.
func casGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, body)
	return body
}

// batchMembers decompresses a batch file and returns its JSON members.
func batchMembers(t *testing.T, data []byte) map[string]any {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

// TestFederationOrbProfileDomainsRelay: two anchord domains in the did:orb profile. A's batch
// files name each other as Orb's do, by hashlinks whose link is A's /cas/<cid>; A's /cas serves
// each file by CID and by hash; and B, which follows A, reads the files through those links and
// resolves every DID A anchors, created and updated, as A resolves it.
func TestFederationOrbProfileDomainsRelay(t *testing.T) {
	t.Parallel()
	a := startDomain(t, "A", "--did-method", "orb")
	b := startDomain(t, "B", "--did-method", "orb")
	b.follow(a)
	load := newFedLoad(t, a.api)
	load.wallet = wallet.New(wallet.Config{Profile: sidetree.Profile{Method: "orb"}, AnchorOrigin: a.actor})
	load.creates(30, 4)
	load.updates(10, a)
	took := waitSame(t, b, a, load.dids(), time.Minute)
	t.Logf("B resolves A's %d DIDs as A does %s after the last update", len(load.dids()), took.Round(time.Millisecond))

	base := "http://" + a.addr
	var refs int
	for _, an := range a.api.anchors(t) {
		core := batchMembers(t, casGet(t, base+"/cas/"+an.CoreIndexCID))
		uri, ok := core["provisionalIndexFileUri"].(string)
		require.True(t, ok, "anchor %d names a provisional index", an.Seq)
		h, err := activity.ParseHashlink(uri)
		require.NoError(t, err, "a hashlink, not a CID: %s", uri)
		require.Len(t, h.Links, 1)
		require.True(t, strings.HasPrefix(h.Links[0], base+"/cas/Qm"), "the link is A's /cas/<cid>: %s", h.Links[0])
		byLink := casGet(t, h.Links[0])
		require.NoError(t, h.Verify(byLink))
		require.Equal(t, byLink, casGet(t, base+"/cas/"+h.ResourceHash()), "/cas serves the file by its hash")
		require.Equal(t, byLink, casGet(t, base+"/cas/"+uri), "and by its hashlink")
		prov := batchMembers(t, byLink)
		chunk := prov["chunks"].([]any)[0].(map[string]any)["chunkFileUri"].(string)
		_, err = activity.ParseHashlink(chunk)
		require.NoError(t, err, "the chunk is named by a hashlink too: %s", chunk)
		refs++
	}
	require.Positive(t, refs)
	require.Positive(t, b.api.metric(t, `anchord_relay_fetched_bytes_total{source="origin"}`))
}
