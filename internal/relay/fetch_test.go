package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
)

func TestCoreIndexCID(t *testing.T) {
	t.Parallel()
	const author = "https://a.example/services/anchord"
	const cid = "QmWATWQ7fVPP2EFGu71UkfnqhYXDYH566qy47CnJDgvs8u"
	for _, tc := range []struct {
		name      string
		links     []string
		cid, base string
	}{
		{"on the author's host", []string{"https://a.example/cas/" + cid}, cid, "https://a.example"},
		{"with a path prefix", []string{"https://A.example/anchord/cas/" + cid}, cid, "https://A.example/anchord"},
		{"ipfs only", []string{"ipfs://" + cid}, cid, "https://a.example"},
		{"another host is never fetched", []string{"https://evil.example/cas/" + cid}, cid, "https://a.example"},
		{"no CID", []string{"https://a.example/cas/not-a-cid", "ipfs://nope"}, "", "https://a.example"},
		{"no links", nil, "", "https://a.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gotCID, gotBase := coreIndexCID(tc.links, author)
			require.Equal(t, tc.cid, gotCID)
			require.Equal(t, tc.base, gotBase)
		})
	}
	require.Empty(t, hostBase("did:web:a.example"))
	require.Equal(t, "http://a.example:8080", hostBase("http://A.example:8080/x"))
}

func TestFilesAreCheckedBeforeTheyAreKept(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, b, d := newDomain(t, n, "a", sqlite(t)), newDomain(t, n, "b", sqlite(t)), newDomain(t, n, "d", sqlite(t))
	b.follow(a)
	d.follow(a)
	d.follow(b)
	ctx := context.Background()
	x, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	an := a.anchorOps(create)
	c := a.publishAll()[0]

	// The origin serves corrupt files: nothing is stored, the activity is retried.
	n.setCorrupt(a, true)
	err = d.deliver(a, c, true)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrInvalid)
	_, err = d.st.CASGet(ctx, an.CoreIndexCID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Nil(t, d.state(x.Suffix))

	// B has good copies and announces them: D takes B's, and checks every one.
	n.setCorrupt(a, false)
	require.NoError(t, b.deliver(a, c, true))
	n.setCorrupt(a, true)
	require.NoError(t, d.deliver(b, b.sent()[0], true))
	require.NotNil(t, d.state(x.Suffix))
	require.Positive(t, testutil.ToFloat64(d.recv.m.fetchedBytes.WithLabelValues(sourceSender)))
	require.Zero(t, testutil.ToFloat64(d.recv.m.fetchedBytes.WithLabelValues(sourceOrigin)))
}

func TestCASKeysOfOrbFiles(t *testing.T) {
	t.Parallel()
	data := []byte("a batch file")
	hash := activity.NewHashlink(data)                                // hl:uEi…
	withMeta := activity.NewHashlink(data, "https://a.example/cas/x") // hl:uEi…:uoQ…
	resource := strings.TrimPrefix(hash, "hl:")
	cid := cas.ComputeCID(data, cas.CIDv0)
	for _, uri := range []string{cid, resource, hash, withMeta} {
		k, err := parseCASKey(uri)
		require.NoError(t, err, uri)
		require.NoError(t, k.verify(data), uri)
		require.Error(t, k.verify([]byte("another file")), uri)
		if uri == cid {
			require.Equal(t, cid, k.path())
		} else {
			require.Equal(t, resource, k.path(), "the owner's /cas serves the multihash")
		}
		require.NoError(t, checkCASURI(uri))
	}
	for _, bad := range []string{"", "Qm", "hl:", "uNotAHash", "hl:uEiB:junk", "https://a.example/x"} {
		require.Error(t, checkCASURI(bad), bad)
	}
	// A hashlink's link is followed on the source's own host only.
	k, err := parseCASKey(withMeta)
	require.NoError(t, err)
	require.Equal(t, "https://a.example/cas/x", k.urlAt("https://A.example"))
	require.Equal(t, "https://b.example/cas/"+resource, k.urlAt("https://b.example"), "not a link to another host")
	k, err = parseCASKey(cid)
	require.NoError(t, err)
	require.Equal(t, "https://b.example/prefix/cas/"+cid, k.urlAt("https://b.example/prefix"))
	c, base := cidOfLink("https://a.example/cas/" + resource)
	require.Equal(t, resource, c)
	require.Equal(t, "https://a.example", base)
}

// TestBatchFilesByHashlink: a did:orb domain's batch files name each other by hashlinks. Its
// follower reads a file through the hashlink's link (on the origin's host) when it has one, and
// from the origin's /cas by the hash when it has none; checks each file against its hash before
// anything is kept; and resolves the DIDs as the origin does.
func TestBatchFilesByHashlink(t *testing.T) {
	t.Parallel()
	for _, links := range []bool{true, false} {
		t.Run(fmt.Sprintf("links=%v", links), func(t *testing.T) {
			t.Parallel()
			n := newNetwork()
			a, b := newOrbDomain(t, n, "a", sqlite(t), links), newOrbDomain(t, n, "b", sqlite(t), true)
			b.follow(a)
			w := wallet.New(wallet.Config{})
			x, createX, err := w.Create()
			require.NoError(t, err)
			z, createZ, err := w.Create()
			require.NoError(t, err)
			first := a.anchorOps(createX, createZ)
			_, createY, err := w.Create()
			require.NoError(t, err)
			updateX, err := w.Update(x, wallet.AddServices(wallet.Service{ID: "s2", Type: "T", Endpoint: "https://x2.example"}))
			require.NoError(t, err)
			deactivateZ, err := w.Deactivate(z)
			require.NoError(t, err)
			// All five files: chunk, provisional index and proof, core proof, core index.
			second := a.anchorOps(createY, updateX, deactivateZ)
			creates := a.publishAll()
			require.Len(t, creates, 2)

			// Every file but the core index (the anchor names it by a CID link) served corrupt:
			// nothing is kept, and the activity is retried, not refused.
			cores := map[string]bool{"/cas/" + first.CoreIndexCID: true, "/cas/" + second.CoreIndexCID: true}
			n.setCorruptPaths(a, func(path string) bool { return !cores[path] })
			err = b.deliver(a, creates[0], true)
			require.Error(t, err)
			require.NotErrorIs(t, err, ErrInvalid)
			require.Nil(t, b.state(x.Suffix))
			_, err = b.st.CASGet(context.Background(), first.CoreIndexCID)
			require.ErrorIs(t, err, store.ErrNotFound, "the core index waits for the files it names")

			n.setCorruptPaths(a, nil)
			for _, c := range creates {
				require.NoError(t, b.deliver(a, c, true))
			}
			for _, suffix := range []string{x.Suffix, z.Suffix} {
				want, got := a.state(suffix), b.state(suffix)
				require.NotNil(t, got, suffix)
				require.Equal(t, want.Document, got.Document, suffix)
				require.Equal(t, want.Deactivated, got.Deactivated, suffix)
			}
			require.True(t, b.state(z.Suffix).Deactivated)

			var byHash int
			for _, p := range n.requested(a) {
				if strings.HasPrefix(p, "/cas/uEi") {
					byHash++
				}
			}
			if links {
				require.Zero(t, byHash, "every file was fetched through its link, /cas/<cid>")
			} else {
				require.Positive(t, byHash, "files named by a bare hashlink come from /cas/<hash>")
			}
		})
	}
}
