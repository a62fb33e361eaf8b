package observer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// ErrNoSuchVersion: the DID has no version with the asked versionId, or none at or before the
// asked versionTime.
var ErrNoSuchVersion = errors.New("no such version of the DID")

// nextVersionTries bounds the search for the version after a resolved one: each try resolves the
// DID's history up to one more anchor. Usually the first anchor after the version is the next
// version; only operations that do not apply (a losing fork, a bad signature) push it further.
const nextVersionTries = 8

// ResolveVersion renders the resolution result of a DID with the DID document metadata DID
// Resolution defines: created, updated and versionId, and, for a version that is not the latest,
// nextUpdate and nextVersionId. A version is an anchor: versionId is the CID of the core index
// file of the anchor that holds the version's last operation (under did:orb's names the anchor's
// hash, Orb's canonical reference, which Orb's versionId is), and its time is when that anchor
// became final.
//
// With versionID set, the DID is resolved from its operations up to and including the anchor
// with that CID; with versionTime set (and no versionID), from the operations anchored at or
// before that time, compared in whole seconds as the metadata times are written. Neither set:
// the latest version. A version that does not exist is ErrNoSuchVersion; a malformed DID is a
// *sidetree.Error.
func (r *Resolver) ResolveVersion(ctx context.Context, did, versionID string, versionTime time.Time) ([]byte, sidetree.ResolutionStatus, error) {
	d, err := sidetree.ParseDID(r.profile, did)
	if err != nil {
		return nil, 0, err
	}
	anchors := anchorCache{st: r.st, seen: map[int64]store.Anchor{}, issued: r.profile.Orb}
	if versionID == "" && versionTime.IsZero() {
		if d.IsOrb() && r.orbLatest(d.Suffix) {
			return r.resolveLatest(ctx, d, nil, &anchors, nil, nil)
		}
		st, err := r.State(ctx, d.Suffix)
		if err != nil {
			return nil, 0, err
		}
		meta, err := anchors.metadata(ctx, st)
		if err != nil {
			return nil, 0, err
		}
		if d.IsOrb() {
			return r.resolveOrb(ctx, d, st, &anchors, meta)
		}
		body, status := sidetree.RenderResolutionWithMetadata(d, st, meta)
		return body, status, nil
	}

	var rows []store.DIDOperation
	if r.known == nil || r.known.MayContain(d.Suffix) {
		if rows, err = r.history(ctx, d.Suffix); err != nil {
			return nil, 0, fmt.Errorf("resolve version of %s: %w", d.Suffix, err)
		}
	}
	cut := -1 // rows[:cut] are the version's history
	for i, row := range rows {
		a, err := anchors.get(ctx, row.AnchorSeq)
		if err != nil {
			return nil, 0, err
		}
		if versionID != "" {
			if a.CoreIndexCID == versionID || (r.profile.Orb && sidetree.OrbAnchorHash(a.Hashlink) == versionID) {
				cut = i + 1
				// Rows of the same anchor are of other operations of no concern here: one
				// operation per DID per batch.
				break
			}
			continue
		}
		if anchors.time(a).Truncate(time.Second).After(versionTime) {
			break
		}
		cut = i + 1
	}
	if cut < 0 {
		return nil, 0, fmt.Errorf("resolve %s: %w", did, ErrNoSuchVersion)
	}
	st := r.ops.Resolve(d.Suffix, anchoredOps(rows[:cut]))
	if st == nil {
		return nil, 0, fmt.Errorf("resolve %s: not created by then: %w", did, ErrNoSuchVersion)
	}
	meta, err := anchors.metadata(ctx, st)
	if err != nil {
		return nil, 0, err
	}
	if err := r.next(ctx, &anchors, d.Suffix, rows, cut, st, &meta); err != nil {
		return nil, 0, err
	}
	if d.IsOrb() {
		return r.resolveOrb(ctx, d, st, &anchors, meta)
	}
	body, status := sidetree.RenderResolutionWithMetadata(d, st, meta)
	return body, status, nil
}

// next fills in the version after st, which was resolved from rows[:cut]: the first later
// anchor whose operation changes the DID's state.
func (r *Resolver) next(ctx context.Context, anchors *anchorCache, suffix string, rows []store.DIDOperation, cut int, st *sidetree.State, meta *sidetree.Metadata) error {
	for tries := 0; cut < len(rows) && tries < nextVersionTries && !st.Deactivated; tries++ {
		seq := rows[cut].AnchorSeq
		for cut < len(rows) && rows[cut].AnchorSeq == seq {
			cut++
		}
		later := r.ops.Resolve(suffix, anchoredOps(rows[:cut]))
		if later == nil || later.LastSequence == st.LastSequence {
			continue
		}
		a, err := anchors.get(ctx, int64(later.LastSequence))
		if err != nil {
			return err
		}
		meta.NextVersionID, meta.NextUpdate = a.CoreIndexCID, anchors.time(a)
		if ref := sidetree.OrbAnchorHash(a.Hashlink); r.profile.Orb && ref != "" {
			meta.NextVersionID = ref
		}
		return nil
	}
	return nil
}

func anchoredOps(rows []store.DIDOperation) []sidetree.AnchoredOperation {
	ops := make([]sidetree.AnchoredOperation, len(rows))
	for i, row := range rows {
		ops[i] = sidetree.AnchoredOperation{
			Sequence: uint64(row.AnchorSeq), Position: row.Index,
			Type: sidetree.OperationType(row.Type), Suffix: row.Suffix, Request: row.Request, Origin: row.Origin,
			Time: row.AnchorIssuedAt,
		}
	}
	return ops
}

// anchorTime is when an anchor became final: the Sidetree "transaction time" of its operations.
func anchorTime(a store.Anchor) time.Time {
	if a.CompletedAt != nil {
		return *a.CompletedAt
	}
	return a.CreatedAt
}

// anchorCache reads each anchor of one resolution once.
type anchorCache struct {
	st   store.Executor
	seen map[int64]store.Anchor
	// issued: the did:orb profile, where an anchor's time is the second its credential was
	// issued, Orb's transaction time, wherever that is recorded: the metadata's times and a
	// versionTime compare with it, as at Orb, not with when the anchor completed here (a
	// witnessed anchor completes once its proofs are in, another domain's when it arrives).
	issued bool
}

// time is an anchor's time in the metadata (see issued).
func (c *anchorCache) time(a store.Anchor) time.Time {
	if c.issued && a.IssuedAt > 0 {
		return time.Unix(a.IssuedAt, 0).UTC()
	}
	return anchorTime(a)
}

func (c *anchorCache) get(ctx context.Context, seq int64) (store.Anchor, error) {
	if a, ok := c.seen[seq]; ok {
		return a, nil
	}
	a, err := c.st.AnchorGet(ctx, seq)
	if err != nil {
		return store.Anchor{}, fmt.Errorf("read anchor %d: %w", seq, err)
	}
	c.seen[seq] = a
	return a, nil
}

// metadata returns created, updated and versionId of a published state (nothing for an
// unpublished one, which no anchor holds).
func (c *anchorCache) metadata(ctx context.Context, st *sidetree.State) (sidetree.Metadata, error) {
	var m sidetree.Metadata
	if st == nil || !st.Published {
		return m, nil
	}
	created, err := c.get(ctx, int64(st.CreateSequence))
	if err != nil {
		return m, err
	}
	last, err := c.get(ctx, int64(st.LastSequence))
	if err != nil {
		return m, err
	}
	m.Created, m.VersionID = c.time(created), last.CoreIndexCID
	if st.LastSequence != st.CreateSequence {
		m.Updated = c.time(last)
	}
	return m, nil
}
