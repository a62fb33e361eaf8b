package observer

import (
	"context"
	"fmt"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// resolveOrb renders a DID parsed under did:orb's names as Orb's resolver does. The canonical
// name is the hash of the anchor of the DID's create or of its latest applied recover (an update
// or a deactivate does not move it; versionId, the hash of the anchor of the last applied
// operation, does). A name that carries another anchor hash resolves only when that anchor holds
// an operation of the DID at or before the canonical one (Orb's verifyCID walks the DID's anchors
// back from the canonical anchor); an anchor this domain does not know, which may be newer than
// what it has, is not found.
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
			if miss := r.miss.Load(); miss != nil && st == nil {
				(*miss)(d.Name())
			}
			return nil, sidetree.ResolutionNotFound, nil
		}
		body, status := sidetree.RenderResolutionWithMetadata(d, st, meta)
		return body, status, nil
	}
	canonicalSeq := int64(st.CanonicalSequence)
	canonical, err := anchors.get(ctx, canonicalSeq)
	if err != nil {
		return nil, 0, err
	}
	// An anchor of this domain gets its hashlink when it is published to followers, moments
	// after it is indexed; until then the DID has no canonical name yet.
	if ref := sidetree.OrbAnchorHash(canonical.Hashlink); ref != "" {
		meta.CanonicalRef, meta.EquivalentRefs = ref, []string{canonical.Hashlink}
	}
	last, err := anchors.get(ctx, int64(st.LastSequence))
	if err != nil {
		return nil, 0, err
	}
	if ref := sidetree.OrbAnchorHash(last.Hashlink); ref != "" {
		meta.VersionID = ref // Orb's versionId is the anchor's hash
	}
	if want := d.AnchorHash(); want != "" && want != meta.CanonicalRef {
		ok, err := r.isAncestor(ctx, anchors, d.Suffix, want, canonicalSeq)
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

// isAncestor reports whether the anchor with hash want holds an operation of the DID anchored
// at or before the canonical anchor (sequence canonicalSeq).
func (r *Resolver) isAncestor(ctx context.Context, anchors *anchorCache, suffix, want string, canonicalSeq int64) (bool, error) {
	rows, err := r.st.DIDOperationList(ctx, suffix)
	if err != nil {
		return false, fmt.Errorf("resolve %s: %w", suffix, err)
	}
	seen := map[int64]bool{}
	for _, row := range rows {
		if seen[row.AnchorSeq] || row.AnchorSeq > canonicalSeq {
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
	return &anchorCache{st: r.st, seen: map[int64]store.Anchor{}, issued: r.profile.Orb}
}

// OrbInfo returns what Orb's DID discovery asks an anchor origin about a did:orb DID: the
// anchor origin the DID declares (or the other domain that anchored its last operation; "" when
// it was anchored here) and the hashlink of its canonical anchor. ok is false for a DID this
// domain does not hold, or holds without a canonical anchor yet, or under another name than
// did:orb's.
func (r *Resolver) OrbInfo(ctx context.Context, did string) (origin, anchor string, ok bool, err error) {
	d, err := sidetree.ParseDID(r.profile, did)
	if err != nil || !d.IsOrb() {
		return "", "", false, nil
	}
	st, err := r.State(ctx, d.Suffix)
	if err != nil || st == nil || !st.Published {
		return "", "", false, err
	}
	a, err := r.orbAnchors().get(ctx, int64(st.CanonicalSequence))
	if err != nil || a.Hashlink == "" {
		return "", "", false, err
	}
	return st.Origin(), a.Hashlink, true, nil
}

// SetMissFunc sets what a did:orb resolution of a DID this domain does not hold, under a name
// that carries an anchor, calls with the name (DID discovery); it must not block.
func (r *Resolver) SetMissFunc(fn func(did string)) { r.miss.Store(&fn) }
