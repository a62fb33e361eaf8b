package sidetree

import (
	"cmp"
	"slices"
)

// AnchoredOperation is an operation as read from an anchored batch.
type AnchoredOperation struct {
	// Sequence orders anchors (the reference implementation's transaction number): every
	// operation of one anchor has the same Sequence, later anchors larger ones. The batch
	// reader leaves it zero; the caller that knows the anchor's place sets it.
	Sequence uint64
	// Position is the operation's index in its batch (operationIndex: creates, then recovers,
	// deactivates, updates).
	Position int
	Type     OperationType
	Suffix   string
	// Request is the operation request rebuilt from the batch files, in the form of
	// Operation.Request.
	Request []byte
}

type anchoredOp struct {
	seq uint64
	pos int
	op  *Operation
}

// Resolve computes a DID's state from its anchored operations (any order; they are sorted by
// Sequence, then Position), following the reference implementation's Resolver: the first create
// that parses wins; then the recover/deactivate chain from the recovery commitment, where for
// each expected commitment the earliest operation that applies wins; then, unless deactivated,
// the update chain the same way. Operations that do not parse, belong to another DID or do not
// apply are skipped; Resolve never fails. It returns nil when no create applies (not found).
func Resolve(p Profile, suffix string, ops []AnchoredOperation) *State {
	parsed := make([]anchoredOp, 0, len(ops))
	for i := range ops {
		op, err := parseOperation(ops[i].Request, p, modeAnchored)
		if err != nil || op.Suffix != suffix {
			continue
		}
		parsed = append(parsed, anchoredOp{seq: ops[i].Sequence, pos: ops[i].Position, op: op})
	}
	slices.SortStableFunc(parsed, func(a, b anchoredOp) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.pos, b.pos))
	})

	var st *State
	recoveries := map[string][]anchoredOp{}
	updates := map[string][]anchoredOp{}
	for _, a := range parsed {
		switch a.op.Type {
		case OperationCreate:
			if st == nil {
				st = applyCreate(a.op, a.seq)
			}
		case OperationUpdate:
			k := a.op.KeyCommitment()
			updates[k] = append(updates[k], a)
		default:
			k := a.op.KeyCommitment()
			recoveries[k] = append(recoveries[k], a)
		}
	}
	if st == nil {
		return nil
	}
	st = applyChain(st, recoveries, true)
	if st.Deactivated {
		return st
	}
	return applyChain(st, updates, false)
}

// applyChain follows one commitment chain. byCommitment maps the commitment an operation's key
// opens to the operations (in anchor order) that open it.
func applyChain(st *State, byCommitment map[string][]anchoredOp, recovery bool) *State {
	for {
		expected := st.UpdateCommitment
		if recovery {
			expected = st.RecoveryCommitment
		}
		candidates := byCommitment[expected]
		if expected == "" || len(candidates) == 0 {
			return st
		}
		var next *State
		for _, c := range candidates {
			ns, ok := apply(st, c.op, c.seq)
			if ok && !reusesCommitment(st, ns, recovery) {
				next = ns
				break
			}
		}
		if next == nil {
			return st
		}
		if next.Deactivated {
			return next
		}
		next.markUsed(recovery, expected)
		st = next
	}
}

// reusesCommitment is the reference implementation's isCommitValueReused: the new state must not
// expect a commitment already consumed or the one just opened.
func reusesCommitment(old, next *State, recovery bool) bool {
	if recovery {
		return has(old.usedRecovery, next.RecoveryCommitment) || next.RecoveryCommitment == old.RecoveryCommitment
	}
	return has(old.usedUpdate, next.UpdateCommitment) || next.UpdateCommitment == old.UpdateCommitment
}
