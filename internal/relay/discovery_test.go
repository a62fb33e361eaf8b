package relay

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

func TestDiscoveryLocation(t *testing.T) {
	t.Parallel()
	const suffix = "EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A"
	hl := activity.NewHashlink([]byte("linkset"), "https://Orb.Example.com:8443/cas/uEiA")
	h, err := activity.ParseHashlink(hl)
	require.NoError(t, err)
	hash := h.ResourceHash()
	for _, tc := range []struct{ did, base string }{
		{"did:orb:https:orb.example.com:" + hash + ":" + suffix, "https://orb.example.com"},
		{"did:orb:http:127.0.0.1:8080:" + hash + ":" + suffix, "http://127.0.0.1:8080"},
		{"did:orb:" + hl + ":" + suffix, "https://orb.example.com:8443"},
		{"did:orb:" + hash + ":" + suffix, ""},               // a bare name: nowhere to look
		{"did:orb:uAAA:" + suffix, ""},                       // unpublished: not discovered, as at Orb
		{"did:orb:https:orb.example.com:uAAA:" + suffix, ""}, // the same with a hint
		{"did:orb:hl:" + hash + ":" + suffix, ""},            // a hashlink without a link
		{"did:sidetree:" + suffix, ""},
	} {
		base, got, err := discoveryLocation(tc.did)
		if tc.base == "" {
			require.Error(t, err, tc.did)
			continue
		}
		require.NoError(t, err, tc.did)
		require.Equal(t, tc.base, base, tc.did)
		require.Equal(t, suffix, got)
	}
}

// TestDiscoveryFetchesTheAnchorChain: a DID created, updated and recovered at A, each in its own
// anchor, is discovered at C (which does not follow A) by the hashlink of its recover's anchor,
// its canonical one. That anchor names the update's as its parent, which names the create's:
// C fetches both ancestors from A, applies the chain in order, and resolves the DID as A does.
func TestDiscoveryFetchesTheAnchorChain(t *testing.T) {
	t.Parallel()
	n := newNetwork()
	a, c := newOrbDomain(t, n, "a", sqlite(t), true), newOrbDomain(t, n, "c", sqlite(t), true)
	w := wallet.New(wallet.Config{})
	x, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "s1", Type: "T", Endpoint: "https://x1.example"}))
	require.NoError(t, err)
	a.anchorOps(create)
	update, err := w.Update(x, wallet.AddServices(wallet.Service{ID: "s2", Type: "T", Endpoint: "https://x2.example"}))
	require.NoError(t, err)
	a.anchorOps(update)
	recover, err := w.Recover(x, wallet.AddServices(wallet.Service{ID: "s3", Type: "T", Endpoint: "https://x3.example"}))
	require.NoError(t, err)
	a.anchorOps(recover)
	creates := a.publishAll()
	require.Len(t, creates, 3)
	canonical := creates[2].act.Object.AnchorEvent.URL[0]

	// A's WebFinger names A as the origin and the recover's anchor; the rest is A's /cas.
	fetch := func(ctx context.Context, raw string, maxBytes int64) ([]byte, error) {
		if strings.HasPrefix(raw, "http://a.test/.well-known/webfinger?") {
			return json.Marshal(map[string]any{
				"properties": map[string]any{"https://trustbloc.dev/ns/anchor-origin": "http://a.test"},
				"links": []any{
					map[string]any{"rel": "via", "href": canonical},
					map[string]any{"rel": "service", "href": a.id.ActorIRI},
				},
			})
		}
		return n.fetch(ctx, raw, maxBytes)
	}
	d := NewDiscoverer(c.recv, fetch, anchordtest.Logger(t))
	res, err := d.runOnce(context.Background(), "did:orb:"+canonical+":"+x.Suffix)
	require.NoError(t, err)
	require.Equal(t, outcomeApplied, res.Outcome)
	require.Equal(t, canonical, res.Hashlink)
	sameState(t, a.state(x.Suffix), c.state(x.Suffix))
	for _, p := range creates {
		got, err := c.st.AnchorsByHashlink(context.Background(), []string{p.act.Object.AnchorEvent.URL[0]})
		require.NoError(t, err)
		require.Len(t, got, 1, "every anchor of the chain is applied at C")
	}
	waiting, err := c.st.WaitingAnchorCount(context.Background(), "")
	require.NoError(t, err)
	require.Zero(t, waiting, "nothing is left waiting")
}
