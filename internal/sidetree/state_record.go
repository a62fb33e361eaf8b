package sidetree

import (
	"cmp"
	"slices"
)

// Position is where an operation was anchored: its anchor's sequence number and its position
// in the batch (AnchoredOperation.Sequence and Position).
type Position struct {
	Sequence uint64
	Index    int
}

func comparePositions(a, b Position) int {
	return cmp.Or(cmp.Compare(a.Sequence, b.Sequence), cmp.Compare(a.Index, b.Index))
}

// StateRecord is a DID's state in the form the per-DID index keeps it: computed when the DID's
// operations are indexed, so that a resolution decodes it (AppendBinary, DecodeStateRecord)
// instead of parsing the DID's history.
//
// Besides the State that Resolve gives for the DID's indexed operations it holds what Next needs
// to compute the state after one more operation without that history: where each operation was
// anchored, and the commitments opened by the operations that did not apply. Resolution is not
// incremental in general: for each expected commitment the earliest operation that opens it and
// applies wins, wherever it was anchored, and the updates are chained only after every recovery.
// An operation that did not apply may therefore apply later, once its commitment comes up; Next
// then declines and the history is resolved again (ResolveRecord).
type StateRecord struct {
	// State is Resolve's state of the DID's indexed operations; nil when no create applies.
	State *State
	// Positions are where the DID's indexed operations were anchored, in anchor order: every
	// one the index holds, whether it parses and applies or not.
	Positions []Position

	// The commitments that the DID's parsed recovers and deactivates (unappliedRecovery) and
	// updates (unappliedUpdate) open which did not apply; nil when none.
	unappliedRecovery map[string]struct{}
	unappliedUpdate   map[string]struct{}
}

// ResolveRecord is Resolve returning the DID's StateRecord.
func ResolveRecord(p Profile, suffix string, ops []AnchoredOperation) *StateRecord {
	st, parsed := resolveHistory(p, suffix, ops, func(request []byte) (*Operation, *Error) {
		return parseOperation(request, p, modeAnchored)
	})
	rec := &StateRecord{State: st, Positions: make([]Position, len(ops))}
	for i := range ops {
		rec.Positions[i] = Position{Sequence: ops[i].Sequence, Index: ops[i].Position}
	}
	slices.SortFunc(rec.Positions, comparePositions)
	rec.Positions = slices.Compact(rec.Positions)
	for _, a := range parsed {
		switch {
		case a.applied || a.op.Type == OperationCreate:
		case a.op.Type == OperationUpdate:
			rec.unappliedUpdate = with(rec.unappliedUpdate, a.op.KeyCommitment())
		default:
			rec.unappliedRecovery = with(rec.unappliedRecovery, a.op.KeyCommitment())
		}
	}
	return rec
}

// Next returns the record after one more operation of the DID (suffix) is indexed, computed
// from r alone, and true; or nil and false when it cannot be, and the DID's history with op
// must be resolved again (ResolveRecord). r is nil for a DID with nothing indexed; r itself is
// never modified. op.Parsed is used when set.
//
// Next declines when op was anchored before an operation r holds (a ledger's late completion)
// or in the same anchor as one, when the DID has no state yet, and when op changes which of the DID's earlier operations
// apply: it installs a commitment that an operation which did not apply opens; it is a recover
// whose update commitment an earlier update opens (resolution chains the updates again after
// every recovery); or it deactivates a DID whose current document came from updates
// (resolution keeps the document as the recoveries left it). An operation r already holds (an
// anchor indexed again after a cut) returns r itself.
func (r *StateRecord) Next(p Profile, suffix string, op AnchoredOperation) (*StateRecord, bool) {
	if r == nil {
		return ResolveRecord(p, suffix, []AnchoredOperation{op}), true
	}
	pos := Position{Sequence: op.Sequence, Index: op.Position}
	if n := len(r.Positions); n > 0 && comparePositions(r.Positions[n-1], pos) >= 0 {
		if _, found := slices.BinarySearchFunc(r.Positions, pos, comparePositions); found {
			return r, true
		}
		return nil, false
	} else if n > 0 && r.Positions[n-1].Sequence == pos.Sequence {
		// Two operations of one DID in one anchor (a batch readers discard, so never indexed):
		// resolution compares an operation's anchor with the last applied one's, which differs
		// between the recoveries' chain and the updates'.
		return nil, false
	}
	next := &StateRecord{
		State: r.State, Positions: append(slices.Clip(r.Positions), pos),
		unappliedRecovery: r.unappliedRecovery, unappliedUpdate: r.unappliedUpdate,
	}
	parsed := op.Parsed
	if parsed == nil {
		var err *Error
		if parsed, err = parseOperation(op.Request, p, modeAnchored); err != nil {
			return next, true // resolution skips it
		}
	}
	if parsed.Suffix != suffix {
		return next, true
	}
	if r.State == nil {
		return nil, false
	}
	// A copy whose document and commitment sets are shared with r's until replaced: neither is
	// ever changed in place.
	st := *r.State
	st.Operations++
	next.State = &st
	a := &anchoredOp{seq: op.Sequence, pos: op.Position, time: max(op.Time, 0), op: parsed, origin: op.Origin}
	switch parsed.Type {
	case OperationCreate:
		// Only the first create applies.
	case OperationUpdate:
		opened := st.UpdateCommitment
		res := &resolution{st: &st, doc: newDocumentBuilder(st.Document), orbTimes: p.Orb}
		if !res.apply(a) {
			next.unappliedUpdate = with(next.unappliedUpdate, parsed.KeyCommitment())
			break
		}
		if has(r.unappliedUpdate, st.UpdateCommitment) {
			return nil, false
		}
		st.usedUpdate = with(st.usedUpdate, opened)
		st.Document = res.doc.document()
	case OperationRecover:
		opened := st.RecoveryCommitment
		res := &resolution{st: &st, orbTimes: p.Orb}
		if !res.apply(a) {
			next.unappliedRecovery = with(next.unappliedRecovery, parsed.KeyCommitment())
			break
		}
		if has(r.unappliedRecovery, st.RecoveryCommitment) {
			return nil, false
		}
		// Resolution chains the updates again from the recover's update commitment, over every
		// update of the history: none of them applies any more unless one opens it.
		if st.UpdateCommitment != "" && (has(r.State.usedUpdate, st.UpdateCommitment) || has(r.unappliedUpdate, st.UpdateCommitment)) {
			return nil, false
		}
		st.usedRecovery = with(st.usedRecovery, opened)
		st.Document = res.doc.document()
		next.unappliedUpdate = union(r.unappliedUpdate, r.State.usedUpdate)
		st.usedUpdate = nil
	case OperationDeactivate:
		// Resolution marks no commitment used by a deactivate: it is the last operation.
		res := &resolution{st: &st, orbTimes: p.Orb}
		if !res.apply(a) {
			next.unappliedRecovery = with(next.unappliedRecovery, parsed.KeyCommitment())
			break
		}
		if len(r.State.usedUpdate) > 0 {
			// The document to keep is the one before those updates.
			return nil, false
		}
	}
	return next, true
}

// with returns set with k added, leaving set itself as it was (it may be shared).
func with(set map[string]struct{}, k string) map[string]struct{} {
	if has(set, k) {
		return set
	}
	out := make(map[string]struct{}, len(set)+1)
	for s := range set {
		out[s] = struct{}{}
	}
	out[k] = struct{}{}
	return out
}

// union returns a ∪ b (nil when both are empty), leaving both as they were.
func union(a, b map[string]struct{}) map[string]struct{} {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make(map[string]struct{}, len(a)+len(b))
	for s := range a {
		out[s] = struct{}{}
	}
	for s := range b {
		out[s] = struct{}{}
	}
	return out
}
