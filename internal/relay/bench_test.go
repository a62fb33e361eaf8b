package relay

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// BenchmarkPublishLargeAnchor measures building the Create of one anchor of 10,000 creates:
// reading its batch back (or not, when the observer handed its DIDs over), the previous anchors
// of its DIDs, laying out the link and signing the credential.
func BenchmarkPublishLargeAnchor(b *testing.B) {
	n := newNetwork()
	d := newDomain(b, n, "a", sqlite(b))
	w := wallet.New(wallet.Config{})
	reqs := make([][]byte, 10_000)
	for i := range reqs {
		_, req, err := w.Create()
		require.NoError(b, err)
		reqs[i] = req
	}
	d.anchorOps(reqs...)
	ctx := context.Background()
	next, err := d.st.AnchorNextToPublish(ctx)
	require.NoError(b, err)
	suffixes, err := d.pub.suffixes(ctx, next)
	require.NoError(b, err)
	for _, handed := range []bool{false, true} {
		b.Run(map[bool]string{false: "read back", true: "handed over"}[handed], func(b *testing.B) {
			for b.Loop() {
				if handed {
					d.pub.Indexed(next.Seq, suffixes)
				}
				_, _, _, err := d.pub.build(ctx, next)
				require.NoError(b, err)
			}
		})
	}
}
