package observer

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// stateBatch is a slice of one anchor's operations on its way into the index, with what their
// DIDs' states need that can be computed before the index transaction begins (on SQLite every
// other commit waits while it runs): each operation parsed, and the state each DID would have
// if the operation were its first.
type stateBatch struct {
	ops   []sidetree.AnchoredOperation
	fresh []store.DIDState
	// many lists the suffixes with more than one operation in the batch (a batch readers
	// discard, so never indexed in practice): their states are computed from their history.
	many map[string]bool
}

// prepareStates parses ops (those that carry no parse; one that does not parse stays without)
// and computes their fresh states. ops must carry their anchor's Sequence and Origin.
func prepareStates(p sidetree.Profile, ops []sidetree.AnchoredOperation) stateBatch {
	for i := range ops {
		if ops[i].Parsed == nil {
			ops[i].Parsed, _ = sidetree.ParseAnchoredOperation(ops[i].Request, p)
		}
	}
	return freshStates(p, ops)
}

// freshStates returns the batch of ops, parsed already, with their fresh states.
func freshStates(p sidetree.Profile, ops []sidetree.AnchoredOperation) stateBatch {
	b := stateBatch{ops: ops, fresh: make([]store.DIDState, 0, len(ops))}
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Suffix] {
			if b.many == nil {
				b.many = map[string]bool{}
			}
			b.many[op.Suffix] = true
			continue
		}
		seen[op.Suffix] = true
		rec, _ := (*sidetree.StateRecord)(nil).Next(p, op.Suffix, op)
		b.fresh = append(b.fresh, stateOf(rec, op.Suffix))
	}
	return b
}

// slice returns the part of b with ops[from:to].
func (b stateBatch) slice(from, to int) stateBatch {
	part := stateBatch{ops: b.ops[from:to], many: b.many}
	in := make(map[string]bool, to-from)
	for _, op := range part.ops {
		in[op.Suffix] = true
	}
	for _, f := range b.fresh {
		if in[f.Suffix] {
			part.fresh = append(part.fresh, f)
		}
	}
	return part
}

// kept returns the batch of those of b's operations (parsed, of an anchor whose sequence number
// was not known yet) that keep lists, as operations of anchor seq.
func (b stateBatch) kept(p sidetree.Profile, seq int64, keep []sidetree.AnchoredOperation) stateBatch {
	in := make(map[int]bool, len(keep))
	for _, op := range keep {
		in[op.Position] = true
	}
	var ops []sidetree.AnchoredOperation
	for _, op := range b.ops {
		if in[op.Position] {
			op.Sequence = uint64(seq)
			ops = append(ops, op)
		}
	}
	return freshStates(p, ops)
}

// stateResult counts what indexStates did.
type stateResult struct {
	// replayed counts the DIDs whose state was computed from their whole history.
	replayed int
}

// indexStates brings the stored states of b's DIDs up to date with b's operations, in the
// transaction that indexes them and after their rows are inserted. A DID without a state gets
// its fresh one; the others' states are locked (store.DIDStateExecutor: two observers indexing
// one DID take turns) and extended by the operation (sidetree.StateRecord.Next), or computed
// again from the DID's history, which the rows inserted in tx are part of, where Next declines
// or the stored state does not decode.
//
// Every DID with indexed operations has a state (observer.FillStates computes those indexed
// before the states existed), so a DID without one has no operations before these.
func (o *Observer) indexStates(ctx context.Context, tx store.Executor, b stateBatch) (stateResult, error) {
	var res stateResult
	if len(b.ops) == 0 {
		return res, nil
	}
	fresh := b.fresh
	if len(b.many) > 0 {
		fresh = nil
		for _, f := range b.fresh {
			if !b.many[f.Suffix] {
				fresh = append(fresh, f)
			}
		}
	}
	inserted, err := tx.DIDStateInsertMany(ctx, fresh)
	if err != nil {
		return res, err
	}
	var rest []string
	var ops []sidetree.AnchoredOperation
	for _, op := range b.ops {
		if !inserted[op.Suffix] && !b.many[op.Suffix] {
			rest = append(rest, op.Suffix)
			ops = append(ops, op)
		}
	}
	for s := range b.many {
		rest = append(rest, s)
	}
	if len(rest) == 0 {
		return res, nil
	}
	stored, err := tx.DIDStateLockMany(ctx, rest)
	if err != nil {
		return res, err
	}
	put := make([]store.DIDState, 0, len(rest))
	for _, op := range ops {
		next, ok := o.nextState(op, stored[op.Suffix])
		if !ok {
			res.replayed++
			if next, err = o.replayState(ctx, tx, op.Suffix, b.ops); err != nil {
				return res, err
			}
		}
		put = append(put, stateOf(next, op.Suffix))
	}
	for s := range b.many {
		res.replayed++
		next, err := o.replayState(ctx, tx, s, b.ops)
		if err != nil {
			return res, err
		}
		put = append(put, stateOf(next, s))
	}
	if err := tx.DIDStatePutMany(ctx, put); err != nil {
		return res, err
	}
	return res, nil
}

// stateOf returns rec as the stored state of suffix.
func stateOf(rec *sidetree.StateRecord, suffix string) store.DIDState {
	pos := make([]store.DIDPosition, len(rec.Positions))
	for i, p := range rec.Positions {
		pos[i] = store.DIDPosition{AnchorSeq: int64(p.Sequence), Index: p.Index}
	}
	return store.DIDState{Suffix: suffix, State: rec.AppendBinary(nil), Positions: pos}
}

// nextState extends a stored state by op; false when it cannot be (see StateRecord.Next), or
// when the stored bytes do not decode.
func (o *Observer) nextState(op sidetree.AnchoredOperation, stored []byte) (*sidetree.StateRecord, bool) {
	if stored == nil {
		// Inserted by another transaction that has since rolled back: the DID has no
		// operations before these after all.
		return (*sidetree.StateRecord)(nil).Next(o.cfg.Profile, op.Suffix, op)
	}
	rec, err := sidetree.DecodeStateRecord(op.Suffix, stored)
	if err != nil {
		o.m.stateUnreadable.Inc()
		o.cfg.Logger.Error("stored DID state does not decode; computing it from the DID's operations", "suffix", op.Suffix, "error", err)
		return nil, false
	}
	return rec.Next(o.cfg.Profile, op.Suffix, op)
}

// replayState computes a DID's state from its whole history as tx sees it, with the rows tx
// inserted for batch (a store that finds a DID's rows by its stored state does not list them
// yet, one with an index by suffix does); the operations of batch keep their parse.
func (o *Observer) replayState(ctx context.Context, tx store.Executor, suffix string, batch []sidetree.AnchoredOperation) (*sidetree.StateRecord, error) {
	rows, err := tx.DIDOperationList(ctx, suffix)
	if err != nil {
		return nil, fmt.Errorf("state of %s: %w", suffix, err)
	}
	listed := make(map[int]bool) // positions in batch of listed rows
	parsed := make([]*sidetree.Operation, len(rows))
	for i := range rows {
		// One anchor's operations are in batch, in position order; the others' requests are
		// read from their batch files.
		if j, found := slices.BinarySearchFunc(batch, rows[i], func(op sidetree.AnchoredOperation, row store.DIDOperation) int {
			return cmp.Or(cmp.Compare(op.Sequence, uint64(row.AnchorSeq)), cmp.Compare(op.Position, row.Index))
		}); found && batch[j].Suffix == suffix {
			rows[i].Request, parsed[i] = batch[j].Request, batch[j].Parsed
			listed[j] = true
		}
	}
	if err := o.batches.Requests(ctx, rows); err != nil {
		return nil, fmt.Errorf("state of %s: %w", suffix, err)
	}
	ops := anchoredOps(rows)
	for i := range ops {
		ops[i].Parsed = parsed[i]
	}
	added := false
	for j, op := range batch {
		if op.Suffix == suffix && !listed[j] {
			ops, added = append(ops, op), true
		}
	}
	if added {
		slices.SortStableFunc(ops, func(a, b sidetree.AnchoredOperation) int {
			return cmp.Or(cmp.Compare(a.Sequence, b.Sequence), cmp.Compare(a.Position, b.Position))
		})
	}
	o.m.stateReplays.Inc()
	return sidetree.ResolveRecord(o.cfg.Profile, suffix, ops), nil
}

// anchored returns ops as operations of anchor seq, made by origin ("" for this domain) and
// issued in second issued (0: not known).
func anchored(seq int64, origin string, issued int64, ops []sidetree.AnchoredOperation) []sidetree.AnchoredOperation {
	out := make([]sidetree.AnchoredOperation, len(ops))
	for i, op := range ops {
		op.Sequence, op.Origin, op.Time = uint64(seq), origin, issued
		out[i] = op
	}
	return out
}
