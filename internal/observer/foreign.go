package observer

import (
	"context"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// ForeignAnchor is another domain's anchor, checked and read, ready to be indexed here.
type ForeignAnchor struct {
	// AnchorString is the Sidetree anchor string of the batch ("<count>.<core index CID>").
	AnchorString string
	CoreIndexCID string
	// Origin is the actor IRI of the domain that made the anchor; Hashlink identifies it.
	Origin   string
	Hashlink string
	// IssuedAt is the whole second (Unix time) of the anchor credential's issuanceDate
	// (store.Anchor.IssuedAt); 0 when not known.
	IssuedAt int64
	// Operations are the batch's operations as the batch reader returns them.
	Operations []sidetree.AnchoredOperation
}

// ForeignFunc runs inside the transaction that records a foreign anchor as anchor seq, before
// its operations are indexed. It returns the operations to index (those it refuses are
// recorded with the anchor but never indexed), and may write in tx whatever must commit with
// the anchor; an error rolls everything back.
type ForeignFunc func(ctx context.Context, tx store.Executor, seq int64, ops []sidetree.AnchoredOperation) ([]sidetree.AnchoredOperation, error)

// ObserveForeign records another domain's anchor, completed and observed, and indexes the
// operations fn keeps, in one transaction: either the anchor is here with its operations or
// neither is. The hashlink makes it idempotent: an anchor already recorded fails with an error
// wrapping store.ErrConflict and nothing changes.
//
// It keeps the Observer's invariants for the writes it makes: the known-suffix filter learns
// every suffix before the commit, and the resolver forgets their states before and after it.
// Foreign operations hold no DID reservation of this domain, so ReleaseTxFunc and ReleaseFunc
// are not told of them.
func (o *Observer) ObserveForeign(ctx context.Context, a ForeignAnchor, fn ForeignFunc) (Result, error) {
	start := time.Now()
	suffixes := make([]string, len(a.Operations))
	for i, op := range a.Operations {
		suffixes[i] = op.Suffix
	}
	if o.cfg.Known != nil {
		// Before the commit, as in observe: a suffix the database has is never reported unknown.
		o.cfg.Known.Add(suffixes)
	}
	if o.cfg.Resolver != nil {
		o.cfg.Resolver.Invalidate(suffixes)
	}
	// Parsed before the transaction; which of them are indexed, and as which anchor, is known
	// only inside it.
	all := prepareStates(o.cfg.Profile, anchored(0, a.Origin, a.IssuedAt, a.Operations))
	var res Result
	err := o.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		rec, err := tx.AnchorInsert(ctx, store.AnchorInsertParams{
			AnchorString: a.AnchorString, CoreIndexCID: a.CoreIndexCID, OpCount: len(a.Operations),
			Backend: store.AnchorBackendFederation, Status: store.AnchorCompleted,
			Origin: a.Origin, Hashlink: a.Hashlink, Observed: true, IssuedAt: a.IssuedAt,
		})
		if err != nil {
			return err
		}
		keep := a.Operations
		if fn != nil {
			if keep, err = fn(ctx, tx, rec.Seq, a.Operations); err != nil {
				return err
			}
		}
		if err := tx.DIDOperationInsertMany(ctx, rows(rec.Seq, keep)); err != nil {
			return err
		}
		if _, err := o.indexStates(ctx, tx, all.kept(o.cfg.Profile, rec.Seq, keep)); err != nil {
			return err
		}
		res = Result{Seq: rec.Seq, Operations: len(keep)}
		failpoint.Hit(failpoint.ObserverBeforeForeignCommit)
		return nil
	})
	if o.cfg.Resolver != nil {
		o.cfg.Resolver.Invalidate(suffixes) // after the commit (or the rollback), before anyone is told
	}
	if err != nil {
		return Result{}, fmt.Errorf("observe anchor %s of %s: %w", a.Hashlink, a.Origin, err)
	}
	o.m.observed.Inc()
	o.m.foreign.Inc()
	o.m.operations.Add(float64(res.Operations))
	o.m.duration.Observe(time.Since(start).Seconds())
	o.cfg.Logger.DebugContext(ctx, "foreign anchor observed", "seq", res.Seq, "origin", a.Origin, "hashlink", a.Hashlink, "operations", res.Operations)
	if o.cfg.IndexedFunc != nil {
		o.cfg.IndexedFunc(res)
	}
	o.signal.Signal(res)
	return res, nil
}
