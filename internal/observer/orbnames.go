package observer

import (
	"context"
	"fmt"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// resolveOrb renders a DID parsed under did:orb's names. The names come from the anchors: the
// canonical name is the hash of the anchor of the DID's last applied operation, and a name that
// carries another anchor hash resolves only when that anchor holds an earlier operation of the
// DID (Orb's verifyCID: an ancestor resolves; an anchor this domain does not know, which may be
// newer than what it has, is not found).
func (r *Resolver) resolveOrb(ctx context.Context, d *sidetree.DID, st *sidetree.State, anchors *anchorCache, meta sidetree.Metadata) ([]byte, sidetree.ResolutionStatus, error) {
	if st != nil && st.Published && meta.Created.IsZero() {
		// Orb's resolution always carries created, updated and versionId.
		m, err := anchors.metadata(ctx, st)
		if err != nil {
			return nil, 0, err
		}
		meta.Created, meta.Updated, meta.VersionID = m.Created, m.Updated, m.VersionID
	}
	if st == nil || !st.Published {
		if d.AnchorHash() != "" && !d.IsLongForm() {
			return nil, sidetree.ResolutionNotFound, nil
		}
		body, status := sidetree.RenderResolutionWithMetadata(d, st, meta)
		return body, status, nil
	}
	last, err := anchors.get(ctx, int64(st.LastSequence))
	if err != nil {
		return nil, 0, err
	}
	// An anchor of this domain gets its hashlink when it is published to followers, moments
	// after it is indexed; until then the DID has no canonical name yet.
	if ref := sidetree.OrbAnchorHash(last.Hashlink); ref != "" {
		// Orb's versionId is the anchor's hash too.
		meta.CanonicalRef, meta.EquivalentRefs, meta.VersionID = ref, []string{last.Hashlink}, ref
	}
	if want := d.AnchorHash(); want != "" && want != meta.CanonicalRef {
		ok, err := r.isAncestor(ctx, anchors, d.Suffix, want)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			return nil, sidetree.ResolutionNotFound, nil
		}
	}
	body, status := sidetree.RenderResolutionWithMetadata(d, st, meta)
	return body, status, nil
}

// isAncestor reports whether the anchor with hash want holds an operation of the DID.
func (r *Resolver) isAncestor(ctx context.Context, anchors *anchorCache, suffix, want string) (bool, error) {
	rows, err := r.st.DIDOperationList(ctx, suffix)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", suffix, err)
	}
	seen := map[int64]bool{}
	for _, row := range rows {
		if seen[row.AnchorSeq] {
			continue
		}
		seen[row.AnchorSeq] = true
		a, err := anchors.get(ctx, row.AnchorSeq)
		if err != nil {
			return false, err
		}
		if sidetree.OrbAnchorHash(a.Hashlink) == want {
			return true, nil
		}
	}
	return false, nil
}

// orbAnchors is an anchorCache for one did:orb resolution.
func (r *Resolver) orbAnchors() *anchorCache {
	return &anchorCache{st: r.st, seen: map[int64]store.Anchor{}}
}
