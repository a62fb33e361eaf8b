package sidetree

import "maps"

// State is a DID's state after resolution.
type State struct {
	Suffix   string
	Document Document
	// RecoveryCommitment is the commitment the next recover or deactivate must open; "" once
	// deactivated.
	RecoveryCommitment string
	// UpdateCommitment is the commitment the next update must open; "" when the DID cannot be
	// updated (deactivated, or the last create/recover had no usable delta).
	UpdateCommitment string
	Deactivated      bool
	// Published is true when the state comes from anchored operations, false for the state a
	// create request or an unpublished long-form DID would give.
	Published bool
	// LastSequence is the anchor sequence number of the last operation applied.
	LastSequence uint64
	// CreateSequence is the anchor sequence number of the create that applied.
	CreateSequence uint64

	// Commitments consumed so far. Resolution refuses an operation that installs one of them
	// again (the reference implementation's loop guard); Check refuses it at intake.
	usedRecovery map[string]struct{}
	usedUpdate   map[string]struct{}
}

// InitialState returns the unpublished state a create operation gives: what the create response
// and an unanchored long-form DID show.
func InitialState(create *Operation) *State {
	if create == nil || create.Type != OperationCreate {
		return nil
	}
	st := applyCreate(create, 0)
	st.Published = false
	return st
}

// Check tests an operation that passed ParseOperation against the DID's current state; s is nil
// when the DID has no anchored create. It answers the questions intake must answer before
// queueing: does the DID exist and is it active, does the revealed key open the commitment the
// DID currently expects (a key other than the committed one fails here, since the signature was
// verified against the revealed key), and would the operation install a commitment already used.
func (s *State) Check(op *Operation) error {
	if op.Type == OperationCreate {
		if s != nil {
			return Errorf(CodeDIDAlreadyExists, "DID %s already exists", op.Suffix)
		}
		return nil
	}
	if s == nil {
		return Errorf(CodeDIDNotFound, "DID %s not found", op.Suffix)
	}
	if op.Suffix != s.Suffix {
		return Errorf(CodeDIDNotFound, "operation is for DID %s, state is of %s", op.Suffix, s.Suffix)
	}
	if s.Deactivated {
		return Errorf(CodeDIDDeactivated, "DID %s is deactivated", op.Suffix)
	}
	opens := op.KeyCommitment()
	if op.Type == OperationUpdate {
		if s.UpdateCommitment == "" {
			return Errorf(CodeNoUpdateCommitment, "DID %s has no update commitment; only recover or deactivate can change it", op.Suffix)
		}
		if opens != s.UpdateCommitment {
			return Errorf(CodeCommitmentMismatch, "the revealed update key opens %s, but the DID's update commitment is %s", opens, s.UpdateCommitment)
		}
		if next := op.Delta.UpdateCommitment; next == s.UpdateCommitment || has(s.usedUpdate, next) {
			return Errorf(CodeCommitmentReuse, "delta.updateCommitment %s was already used by this DID", next)
		}
		return nil
	}
	if opens != s.RecoveryCommitment {
		return Errorf(CodeCommitmentMismatch, "the revealed recovery key opens %s, but the DID's recovery commitment is %s", opens, s.RecoveryCommitment)
	}
	if op.Type == OperationRecover {
		if next := op.NextRecoveryCommitment; next == s.RecoveryCommitment || has(s.usedRecovery, next) {
			return Errorf(CodeCommitmentReuse, "recoveryCommitment %s was already used by this DID", next)
		}
	}
	return nil
}

func has(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// clone copies s for a new state; the used-commitment sets are shared until written.
func (s *State) clone() *State {
	c := *s
	return &c
}

// markUsed records a consumed commitment in a copy of the relevant set (states are values that
// earlier candidates may still hold).
func (s *State) markUsed(recovery bool, commitment string) {
	set := &s.usedUpdate
	if recovery {
		set = &s.usedRecovery
	}
	m := maps.Clone(*set)
	if m == nil {
		m = make(map[string]struct{}, 1)
	}
	m[commitment] = struct{}{}
	*set = m
}

// applyCreate gives the state of a create: the recovery commitment always; the update
// commitment and the document only when the delta is present and matches deltaHash.
func applyCreate(op *Operation, seq uint64) *State {
	st := &State{Suffix: op.Suffix, RecoveryCommitment: op.SuffixData.RecoveryCommitment, Published: true, LastSequence: seq, CreateSequence: seq}
	if op.Delta != nil && op.Delta.Hash() == op.SuffixData.DeltaHash {
		st.UpdateCommitment = op.Delta.UpdateCommitment
		st.Document = applyPatches(Document{}, op.Delta.Patches)
	}
	return st
}

// apply returns the state after op, or false when op does not apply to st (OperationProcessor
// semantics: key must open the expected commitment, signature must verify, delta must match).
func apply(st *State, op *Operation, seq uint64) (*State, bool) {
	// The reference implementation detects "not applied" by an unchanged transaction number, so
	// an operation anchored in the same transaction as the previous one never applies.
	if seq == st.LastSequence {
		return nil, false
	}
	opens := op.KeyCommitment()
	switch op.Type {
	case OperationUpdate:
		if st.UpdateCommitment == "" || opens != st.UpdateCommitment || op.verifySignature() != nil {
			return nil, false
		}
		if op.Delta == nil || op.Delta.Hash() != op.DeltaHash {
			return nil, false
		}
		next := st.clone()
		next.UpdateCommitment = op.Delta.UpdateCommitment
		next.Document = applyPatches(st.Document, op.Delta.Patches)
		next.LastSequence = seq
		return next, true
	case OperationRecover:
		if opens != st.RecoveryCommitment || op.verifySignature() != nil {
			return nil, false
		}
		next := st.clone()
		next.RecoveryCommitment = op.NextRecoveryCommitment
		next.UpdateCommitment = ""
		next.Document = Document{}
		next.LastSequence = seq
		if op.Delta != nil && op.Delta.Hash() == op.DeltaHash {
			next.UpdateCommitment = op.Delta.UpdateCommitment
			next.Document = applyPatches(Document{}, op.Delta.Patches)
		}
		return next, true
	case OperationDeactivate:
		if opens != st.RecoveryCommitment || op.verifySignature() != nil {
			return nil, false
		}
		next := st.clone()
		next.RecoveryCommitment, next.UpdateCommitment = "", ""
		next.Deactivated = true
		next.LastSequence = seq
		return next, true
	default:
		return nil, false
	}
}
