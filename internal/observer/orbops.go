package observer

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// OrbOperations configures what a did:orb resolution does with operations beyond the DID's
// index rows, as Orb's server flags of the same names do.
type OrbOperations struct {
	// Unpublished, when set, is applied after the anchored operations (Orb's
	// --enable-unpublished-operation-store).
	Unpublished *Unpublished
	// IncludeUnpublished and IncludePublished list the DID's operations in the method metadata
	// (--include-unpublished-operations-in-metadata, --include-published-operations-in-metadata):
	// what a domain that resolves the DID from this one, its anchor origin, merges.
	IncludeUnpublished bool
	IncludePublished   bool
}

// OriginOperation is an operation a DID's anchor origin lists in its resolution metadata.
type OriginOperation struct {
	Type    sidetree.OperationType
	Request []byte
	// Time is Orb's transactionTime: when the operation's anchor credential was issued, or when
	// an unpublished one was accepted.
	Time time.Time
	// Ref is a published operation's anchor hash (canonicalReference); Hashlink the anchor's
	// hashlink when the origin names one.
	Ref      string
	Hashlink string
	// AnchorOrigin is the DID's anchor origin the origin lists with the operation.
	AnchorOrigin string
}

// Sequence numbers of the operations resolution applies beyond the index rows: above every
// anchor's, the published ones of an anchor origin first, then the unpublished ones, each its
// own so that no two count as one anchor.
const (
	extraSequence       = 1 << 62
	unpublishedSequence = extraSequence + 1<<40
)

// SetOrbOperations sets what did:orb resolutions do with unpublished operations and the
// metadata lists. Set it before the server takes requests.
func (r *Resolver) SetOrbOperations(o OrbOperations) { r.orbOps.Store(&o) }

// orbLatest reports whether a did:orb resolution of the latest version of suffix goes through
// resolveLatest: the lists are asked for, or the DID has unpublished operations.
func (r *Resolver) orbLatest(suffix string) bool {
	o := r.orbOps.Load()
	return o != nil && (o.IncludePublished || o.IncludeUnpublished || (o.Unpublished != nil && o.Unpublished.has(suffix)))
}

// ResolveFromOrigin is the latest version of a did:orb DID with what its anchor origin reports
// merged in, as Orb's resolver merges it: the origin's unpublished operations, and its published
// ones after this domain's head (the anchor of the DID's last indexed operation here; none when
// the origin does not list that anchor). merged is false when that leaves nothing to add: the
// caller keeps its local result. Whether the origin's answer may be trusted is the caller's to
// check, by comparing it with the result.
func (r *Resolver) ResolveFromOrigin(ctx context.Context, did string, published, unpublished []OriginOperation) (body []byte, status sidetree.ResolutionStatus, merged bool, err error) {
	d, err := sidetree.ParseDID(r.profile, did)
	if err != nil {
		return nil, 0, false, err
	}
	if !d.IsOrb() {
		return nil, 0, false, nil
	}
	rows, err := r.indexRows(ctx, d.Suffix)
	if err != nil || len(rows) == 0 {
		return nil, 0, false, err
	}
	anchors := r.orbAnchors()
	head, err := anchors.get(ctx, rows[len(rows)-1].AnchorSeq)
	if err != nil {
		return nil, 0, false, err
	}
	var newer []OriginOperation
	if ref := sidetree.OrbAnchorHash(head.Hashlink); ref != "" {
		if i := slices.IndexFunc(published, func(o OriginOperation) bool { return o.Ref == ref }); i >= 0 && i+1 < len(published) {
			// The DID's other anchors are read only now: an origin that has nothing after the
			// head, the usual answer, costs one read, not one per anchor of the DID's history.
			known := map[string]bool{}
			for _, row := range rows {
				a, err := anchors.get(ctx, row.AnchorSeq)
				if err != nil {
					return nil, 0, false, err
				}
				if ref := sidetree.OrbAnchorHash(a.Hashlink); ref != "" {
					known[ref] = true
				}
			}
			newer = slices.DeleteFunc(slices.Clone(published[i+1:]), func(o OriginOperation) bool { return o.Ref == "" || known[o.Ref] })
		}
	}
	if len(newer) == 0 && len(unpublished) == 0 {
		return nil, 0, false, nil
	}
	body, status, err = r.resolveLatest(ctx, d, rows, anchors, newer, unpublished)
	return body, status, err == nil, err
}

// indexRows reads the index rows of suffix (none for a DID the filter of known DIDs has never
// seen).
func (r *Resolver) indexRows(ctx context.Context, suffix string) ([]store.DIDOperation, error) {
	if r.known != nil && !r.known.MayContain(suffix) {
		return nil, nil
	}
	rows, err := r.st.DIDOperationList(ctx, suffix)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", suffix, err)
	}
	return rows, nil
}

// resolveLatest renders the latest version of a did:orb DID from its index rows, the published
// operations an anchor origin reports beyond them, and the unpublished operations (this
// domain's, then the origin's), as Orb's operation processor orders them: anchored ones first,
// then unpublished ones by the time they were accepted. An operation that does not apply is
// skipped, as any anchored one is. With rows nil, the rows are read here.
//
// An operation beyond the rows stands for an anchor of its own in the resolution: a published
// one names its anchor (canonicalId, versionId) and its time (updated); an unpublished one only
// its time, and a DID whose create is unpublished is unpublished.
func (r *Resolver) resolveLatest(ctx context.Context, d *sidetree.DID, rows []store.DIDOperation, anchors *anchorCache, published, unpublished []OriginOperation) ([]byte, sidetree.ResolutionStatus, error) {
	if rows == nil {
		var err error
		if rows, err = r.indexRows(ctx, d.Suffix); err != nil {
			return nil, 0, err
		}
	}
	if anchors == nil {
		anchors = r.orbAnchors()
	}
	cfg := r.orbOps.Load()
	if cfg == nil {
		cfg = &OrbOperations{}
	}
	// The rows' requests are compared with the unpublished operations, resolved and listed.
	if err := r.batches.Load().Requests(ctx, rows); err != nil {
		return nil, 0, fmt.Errorf("resolve %s: %w", d.Suffix, err)
	}
	var local []unpublishedOp
	if cfg.Unpublished != nil {
		local = cfg.Unpublished.of(d.Suffix, rows)
	}
	pending := make([]OriginOperation, 0, len(local)+len(unpublished))
	for _, o := range local {
		pending = append(pending, OriginOperation{Type: o.typ, Request: o.request, Time: o.at, AnchorOrigin: o.origin})
	}
	pending = append(pending, unpublished...)
	slices.SortStableFunc(pending, func(a, b OriginOperation) int { return a.Time.Compare(b.Time) })

	ops := anchoredOps(rows)
	// A published operation carries its anchor's second into resolution (Orb's rule on an
	// update in its DID's canonical second); an unpublished one none, as Orb applies it
	// whatever its time.
	add := func(seq uint64, o OriginOperation, hashlink string, second int64) {
		ops = append(ops, sidetree.AnchoredOperation{Sequence: seq, Type: o.Type, Suffix: d.Suffix, Request: o.Request, Time: second})
		at := o.Time
		anchors.seen[int64(seq)] = store.Anchor{Seq: int64(seq), CreatedAt: at, CompletedAt: &at, Hashlink: hashlink, IssuedAt: second}
	}
	for i, o := range published {
		add(extraSequence+uint64(i), o, cmp.Or(o.Hashlink, "hl:"+o.Ref), max(o.Time.Unix(), 0))
	}
	for i, o := range pending {
		add(unpublishedSequence+uint64(i), o, "", 0)
	}
	var st *sidetree.State
	if len(published) == 0 && len(unpublished) == 0 {
		// Only this domain's own operations: the parsed ones may be kept.
		st = r.ops.Resolve(d.Suffix, ops)
	} else {
		st = sidetree.Resolve(r.profile, d.Suffix, ops)
	}
	if st != nil && st.CreateSequence >= unpublishedSequence {
		st.Published = false // this resolution's own state: nothing else holds it
	}
	meta, err := anchors.metadata(ctx, st)
	if err != nil {
		return nil, 0, err
	}
	if st != nil {
		if err := r.orbLists(ctx, cfg, st, rows, anchors, published, pending, &meta); err != nil {
			return nil, 0, err
		}
	}
	return r.resolveOrb(ctx, d, st, anchors, meta)
}

// orbLists fills the metadata's operation lists the configuration asks for: the DID's anchored
// operations (the index rows, then an origin's published ones) and its unpublished ones. An
// operation of an anchor of this domain's that is not published yet (it has no hashlink, so no
// other domain can name it) is listed as unpublished: a domain merging the lists applies it after
// the published ones, as it will be.
func (r *Resolver) orbLists(ctx context.Context, cfg *OrbOperations, st *sidetree.State, rows []store.DIDOperation, anchors *anchorCache, published, pending []OriginOperation, meta *sidetree.Metadata) error {
	if !cfg.IncludePublished && !cfg.IncludeUnpublished {
		return nil
	}
	var pub []sidetree.OrbPublishedOperation
	var unpub []sidetree.OrbUnpublishedOperation
	seen := map[string]bool{}
	for _, row := range rows {
		a, err := anchors.get(ctx, row.AnchorSeq)
		if err != nil {
			return err
		}
		at := uint64(max(anchors.time(a).Unix(), 0))
		ref := sidetree.OrbAnchorHash(a.Hashlink)
		if ref == "" {
			unpub = append(unpub, sidetree.OrbUnpublishedOperation{
				Type: sidetree.OperationType(row.Type), Operation: row.Request, TransactionTime: at,
				ProtocolVersion: sidetree.OrbProtocolVersion, AnchorOrigin: st.AnchorOrigin,
			})
			continue
		}
		if seen[ref] {
			continue // Orb lists an anchor once
		}
		seen[ref] = true
		pub = append(pub, sidetree.OrbPublishedOperation{
			Type: sidetree.OperationType(row.Type), Operation: row.Request, TransactionTime: at,
			ProtocolVersion: sidetree.OrbProtocolVersion, CanonicalReference: ref, EquivalentReferences: []string{a.Hashlink},
			AnchorOrigin: st.AnchorOrigin,
		})
	}
	for _, o := range published {
		if seen[o.Ref] {
			continue
		}
		seen[o.Ref] = true
		op := sidetree.OrbPublishedOperation{
			Type: o.Type, Operation: o.Request, TransactionTime: uint64(max(o.Time.Unix(), 0)),
			ProtocolVersion: sidetree.OrbProtocolVersion, CanonicalReference: o.Ref, AnchorOrigin: o.AnchorOrigin,
		}
		if o.Hashlink != "" {
			op.EquivalentReferences = []string{o.Hashlink}
		}
		pub = append(pub, op)
	}
	for _, o := range pending {
		unpub = append(unpub, sidetree.OrbUnpublishedOperation{
			Type: o.Type, Operation: o.Request, TransactionTime: uint64(max(o.Time.Unix(), 0)),
			ProtocolVersion: sidetree.OrbProtocolVersion, AnchorOrigin: o.AnchorOrigin,
		})
	}
	if cfg.IncludePublished {
		meta.PublishedOps = pub
	}
	if cfg.IncludeUnpublished {
		meta.UnpublishedOps = unpub
	}
	return nil
}
