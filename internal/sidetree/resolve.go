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
	// Origin names the domain whose anchor carried the operation when that is another domain
	// (its actor IRI); "" for an anchor of this domain.
	Origin string
	// Time is the whole second (Unix time) in which the operation's anchor was issued: the
	// anchor credential's issuanceDate, Orb's transaction time. 0 (or any time not after 1970)
	// when it is not known (an anchor recorded before the index kept it); the did:orb profile's
	// rule on it (see resolution.apply) then does not apply.
	Time int64
	// Parsed, when set, is Request already parsed (by ParseOperation at intake, whose result
	// for an operation it accepts is what the anchored parse of its Request gives): resolution
	// uses it instead of parsing Request again. The batch writer's operations carry it.
	Parsed *Operation
}

type anchoredOp struct {
	seq    uint64
	pos    int
	time   int64
	op     *Operation
	origin string
	// applied is set once the operation applied (creates excepted: only the first counts).
	applied bool
}

// Resolve computes a DID's state from its anchored operations (any order; they are sorted by
// Sequence, then Position), following the reference implementation's Resolver: the first create
// that parses wins; then the recover/deactivate chain from the recovery commitment, where for
// each expected commitment the earliest operation that applies wins; then, unless deactivated,
// the update chain the same way. Operations that do not parse, belong to another DID or do not
// apply are skipped; Resolve never fails. It returns nil when no create applies (not found).
func Resolve(p Profile, suffix string, ops []AnchoredOperation) *State {
	return resolve(p, suffix, ops, func(request []byte) (*Operation, *Error) {
		return parseOperation(request, p, modeAnchored)
	})
}

// resolve is Resolve with the anchored parse given; it only reads the Operations parse returns
// (verifying a signature marks it verified), so they may be shared.
func resolve(p Profile, suffix string, ops []AnchoredOperation, parse func(request []byte) (*Operation, *Error)) *State {
	st, _ := resolveHistory(p, suffix, ops, parse)
	return st
}

// resolveHistory is resolve that also returns the operations it parsed, in anchor order, each
// marked applied or not.
func resolveHistory(p Profile, suffix string, ops []AnchoredOperation, parse func(request []byte) (*Operation, *Error)) (*State, []anchoredOp) {
	parsed := make([]anchoredOp, 0, len(ops))
	for i := range ops {
		op := ops[i].Parsed
		if op == nil {
			var err *Error
			if op, err = parse(ops[i].Request); err != nil {
				continue
			}
		}
		if op.Suffix != suffix {
			continue
		}
		parsed = append(parsed, anchoredOp{seq: ops[i].Sequence, pos: ops[i].Position, time: max(ops[i].Time, 0), op: op, origin: ops[i].Origin})
	}
	slices.SortStableFunc(parsed, func(a, b anchoredOp) int {
		return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.pos, b.pos))
	})

	var r *resolution
	recoveries := map[string][]*anchoredOp{}
	updates := map[string][]*anchoredOp{}
	for i := range parsed {
		a := &parsed[i]
		switch a.op.Type {
		case OperationCreate:
			if r == nil {
				r = newResolution(*a, p.Orb)
			}
		case OperationUpdate:
			k := a.op.KeyCommitment()
			updates[k] = append(updates[k], a)
		default:
			k := a.op.KeyCommitment()
			recoveries[k] = append(recoveries[k], a)
		}
	}
	if r == nil {
		return nil, parsed
	}
	r.st.Operations = len(parsed)
	r.chain(recoveries, true)
	if !r.st.Deactivated {
		r.chain(updates, false)
	}
	r.st.Document = r.doc.document()
	return r.st, parsed
}

// resolution is the working state of one Resolve call. It owns st (with its used-commitment
// sets) and doc, and changes them in place until Resolve returns st: an operation costs time in
// proportion to its own size, not to the DID's history. (Building a new state, document and
// used set per operation made resolution quadratic in the history.)
type resolution struct {
	st  *State
	doc *documentBuilder
	// orbTimes applies did:orb's rule on anchor times (see apply).
	orbTimes bool
}

// newResolution starts from a create: the recovery commitment always; the update commitment and
// the document only when the delta is present and matches deltaHash.
//
// Under orbTimes the state keeps the create's anchor second (CanonicalTime); otherwise it keeps
// none, and its stored record is not the larger for it.
func newResolution(a anchoredOp, orbTimes bool) *resolution {
	create := a.op
	r := &resolution{
		st: &State{
			Suffix: create.Suffix, RecoveryCommitment: create.SuffixData.RecoveryCommitment, Published: true,
			LastSequence: a.seq, CreateSequence: a.seq, CanonicalSequence: a.seq,
			AnchorOrigin: create.AnchorOrigin, AnchoredBy: a.origin,
		},
		doc:      newDocumentBuilder(Document{}),
		orbTimes: orbTimes,
	}
	if orbTimes {
		r.st.CanonicalTime = a.time
	}
	if create.Delta != nil && create.Delta.Hash() == create.SuffixData.DeltaHash {
		r.st.UpdateCommitment = create.Delta.UpdateCommitment
		r.doc.apply(create.Delta.Patches)
	}
	return r
}

// chain follows one commitment chain. byCommitment maps the commitment an operation's key opens
// to the operations (in anchor order) that open it; for each expected commitment the first that
// applies wins. Every step consumes a commitment that can never be expected again, so each list
// is scanned at most once.
func (r *resolution) chain(byCommitment map[string][]*anchoredOp, recovery bool) {
	for {
		expected := r.st.UpdateCommitment
		if recovery {
			expected = r.st.RecoveryCommitment
		}
		if expected == "" {
			return
		}
		applied := false
		for _, c := range byCommitment[expected] {
			if r.apply(c) {
				applied = true
				break
			}
		}
		if !applied || r.st.Deactivated {
			return
		}
		r.st.markUsed(recovery, expected)
	}
}

// inWindow reports whether a was anchored within its signed window (anchorFrom, anchorUntil)
// under orbTimes, as Orb's operation applier checks it against the anchor's second: from ≤ t ≤
// until, an anchorFrom alone valid for OrbAnchorWindow seconds. An operation without a window,
// one whose second is not known, and every one under the other profiles pass. Outside its
// window an update still moves the update commitment and leaves the document as it was, a
// recover still moves both commitments and leaves an empty document, and a deactivate does not
// apply: what Orb's applier does with each.
func (r *resolution) inWindow(a *anchoredOp) bool {
	from, until := a.op.AnchorFrom, a.op.AnchorUntil
	if !r.orbTimes || a.time == 0 || (from == 0 && until == 0) {
		return true
	}
	if from != 0 && until == 0 {
		until = from + OrbAnchorWindow
	}
	return from <= a.time && a.time <= until
}

// apply applies op if it applies to the current state, and reports whether it did. It follows
// OperationProcessor: the revealed key must open the expected commitment, the signature must
// verify, an update's delta must match its deltaHash; and, as isCommitValueReused, the
// operation must not install a commitment already consumed or the one it opens. Every check
// comes before any change, so an operation that does not apply leaves the state as it was.
//
// Under orbTimes an update also must have been anchored in a later whole second than the
// create or the last recover that applied (State.CanonicalTime): Orb orders a DID's operations
// by their anchor's second, and after the create and the recoveries it takes only the updates
// whose transaction time is greater (its transaction number is always 0), so it ignores an
// update anchored in the same second as that operation. Where either time is not known the
// rule is not applied.
func (r *resolution) apply(a *anchoredOp) bool {
	op, seq, st := a.op, a.seq, r.st
	// The reference implementation detects "not applied" by an unchanged transaction number, so
	// an operation anchored in the same transaction as the previous one never applies.
	if seq == st.LastSequence {
		return false
	}
	opens := op.KeyCommitment()
	switch op.Type {
	case OperationUpdate:
		if st.UpdateCommitment == "" || opens != st.UpdateCommitment {
			return false
		}
		if r.orbTimes && a.time != 0 && st.CanonicalTime != 0 && a.time <= st.CanonicalTime {
			return false
		}
		if op.Delta == nil || op.Delta.Hash() != op.DeltaHash {
			return false
		}
		next := op.Delta.UpdateCommitment
		if next == st.UpdateCommitment || has(st.usedUpdate, next) || op.verifySignature() != nil {
			return false
		}
		st.UpdateCommitment = next
		if r.inWindow(a) {
			r.doc.apply(op.Delta.Patches)
		}
	case OperationRecover:
		next := op.NextRecoveryCommitment
		if opens != st.RecoveryCommitment || next == st.RecoveryCommitment || has(st.usedRecovery, next) {
			return false
		}
		if op.verifySignature() != nil {
			return false
		}
		st.RecoveryCommitment, st.UpdateCommitment = next, ""
		st.CanonicalSequence = seq
		if r.orbTimes {
			st.CanonicalTime = a.time
		}
		if op.AnchorOrigin != "" {
			st.AnchorOrigin = op.AnchorOrigin
		}
		r.doc = newDocumentBuilder(Document{})
		if op.Delta != nil && op.Delta.Hash() == op.DeltaHash {
			st.UpdateCommitment = op.Delta.UpdateCommitment
			if r.inWindow(a) {
				r.doc.apply(op.Delta.Patches)
			}
		}
	case OperationDeactivate:
		// The document stays as it was; a deactivated DID renders without it.
		if opens != st.RecoveryCommitment || op.verifySignature() != nil || !r.inWindow(a) {
			return false
		}
		st.RecoveryCommitment, st.UpdateCommitment = "", ""
		st.Deactivated = true
	default:
		return false
	}
	st.LastSequence = seq
	st.AnchoredBy = a.origin
	a.applied = true
	return true
}
