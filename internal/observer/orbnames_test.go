package observer

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// hashlinkOf is a hashlink of content as a domain records it for an anchor.
func hashlinkOf(content string) (hash, hashlink string) {
	sum := sha256.Sum256([]byte(content))
	hash = "u" + base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, sum[:]...))
	return hash, "hl:" + hash
}

// TestResolveOrbNames: under did:orb's names a DID resolves by its canonical name (the hash of
// the anchor of its last operation), by uAAA, by its hashlink and domain hints, and by the hash
// of an earlier anchor of its own; a hash this domain does not hold for it is not found, as
// Orb's verifyCID has it. The metadata names the DID as Orb does.
func TestResolveOrbNames(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		b := setup(t, st)
		b.wallet = wallet.New(wallet.Config{AnchorOrigin: "https://orb.example.com"})
		o := b.observer(t)
		p := sidetree.OrbProfile("https:anchord.example.com")
		r := newTestResolver(p, st, nil, 0)

		id, create, err := b.wallet.Create()
		require.NoError(t, err)
		a1 := b.anchorOps(t, create)
		_, err = o.runOnce(ctx)
		require.NoError(t, err)

		resolve := func(did string) (map[string]any, sidetree.ResolutionStatus) {
			t.Helper()
			body, status, err := r.Resolve(ctx, did)
			require.NoError(t, err)
			if status == sidetree.ResolutionNotFound {
				return nil, status
			}
			var res map[string]any
			require.NoError(t, json.Unmarshal(body, &res))
			return res["didDocumentMetadata"].(map[string]any), status
		}

		// Indexed but not yet published to followers: found, no canonical name yet.
		meta, status := resolve("did:orb:uAAA:" + id.Suffix)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.NotContains(t, meta, "canonicalId")

		h1, hl1 := hashlinkOf("anchor 1")
		require.NoError(t, st.AnchorMarkPublished(ctx, a1.Seq, hl1))
		canonical1 := "did:orb:" + h1 + ":" + id.Suffix
		for _, name := range []string{
			"did:orb:uAAA:" + id.Suffix, canonical1, "did:orb:" + hl1 + ":" + id.Suffix,
			"did:orb:https:orb.example.com:" + h1 + ":" + id.Suffix, "did:orb:" + id.Suffix,
		} {
			meta, status = resolve(name)
			require.Equal(t, sidetree.ResolutionFound, status, name)
			require.Equal(t, canonical1, meta["canonicalId"], name)
			require.Equal(t, []any{canonical1, "did:orb:" + hl1 + ":" + id.Suffix}, meta["equivalentId"], name)
		}
		unknown, _ := hashlinkOf("an anchor this domain has not seen")
		_, status = resolve("did:orb:" + unknown + ":" + id.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status, "a newer anchor than this domain knows")

		// An update moves versionId, not the canonical name (Orb's applier keeps a create's or
		// recover's reference); the update's anchor is newer than the canonical one, so a name
		// carrying it is not found, as at Orb.
		update, err := b.wallet.Update(id)
		require.NoError(t, err)
		a2 := b.anchorOps(t, update)
		_, err = o.runOnce(ctx)
		require.NoError(t, err)
		h2, hl2 := hashlinkOf("anchor 2")
		require.NoError(t, st.AnchorMarkPublished(ctx, a2.Seq, hl2))
		meta, status = resolve(canonical1)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.Equal(t, canonical1, meta["canonicalId"])
		require.Equal(t, h2, meta["versionId"], "Orb's versionId is the hash of the last operation's anchor")
		_, status = resolve("did:orb:" + h2 + ":" + id.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status, "an anchor after the canonical one")
		body, status, err := r.ResolveVersion(ctx, canonical1, h1, time.Time{})
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.Contains(t, string(body), `"versionId":"`+h1+`"`, "?versionId= takes the anchor hash")
		require.Contains(t, string(body), `"nextVersionId":"`+h2+`"`)

		// A recover moves the canonical name; the earlier anchors are its ancestors.
		recover, err := b.wallet.Recover(id)
		require.NoError(t, err)
		a3 := b.anchorOps(t, recover)
		_, err = o.runOnce(ctx)
		require.NoError(t, err)
		h3, hl3 := hashlinkOf("anchor 3")
		require.NoError(t, st.AnchorMarkPublished(ctx, a3.Seq, hl3))
		canonical3 := "did:orb:" + h3 + ":" + id.Suffix
		for _, name := range []string{canonical1, "did:orb:" + h2 + ":" + id.Suffix, canonical3, "did:orb:uAAA:" + id.Suffix} {
			meta, status = resolve(name)
			require.Equal(t, sidetree.ResolutionFound, status, name)
			require.Equal(t, canonical3, meta["canonicalId"], "%s: an ancestor's name resolves to the latest", name)
			require.Equal(t, []any{canonical3, "did:orb:" + hl3 + ":" + id.Suffix}, meta["equivalentId"])
		}
		_, status = resolve("did:orb:" + unknown + ":" + id.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status)

		// The full resolution (DID Resolution metadata) names it the same way.
		body, status, err = r.ResolveVersion(ctx, canonical1, "", time.Time{})
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.Contains(t, string(body), `"canonicalId":"`+canonical3+`"`)
		_, status, err = r.ResolveVersion(ctx, "did:orb:"+unknown+":"+id.Suffix, "", time.Time{})
		require.NoError(t, err)
		require.Equal(t, sidetree.ResolutionNotFound, status)

		// A DID nobody anchored: not found by any name; its long form resolves unpublished.
		// (Orb's intake takes no delta without patches.)
		other, otherCreate, err := b.wallet.Create(wallet.AddServices(wallet.Service{ID: "s", Type: "LinkedDomains", Endpoint: "https://example.com"}))
		require.NoError(t, err)
		_, status = resolve("did:orb:uAAA:" + other.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status)
		_, status = resolve(canonical3[:len(canonical3)-len(id.Suffix)] + other.Suffix)
		require.Equal(t, sidetree.ResolutionNotFound, status)
		op, err := sidetree.ParseOperation(otherCreate, p)
		require.NoError(t, err)
		long, err := sidetree.LongFormDID(p, op)
		require.NoError(t, err)
		meta, status = resolve(long)
		require.Equal(t, sidetree.ResolutionFound, status)
		require.Equal(t, false, meta["method"].(map[string]any)["published"])
	})
}
