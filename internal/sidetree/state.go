package sidetree

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
	// AnchorOrigin is the anchorOrigin the DID's create, or its latest applied recover that
	// declares one, declares; "" when none does.
	AnchorOrigin string
	// AnchoredBy is the other domain whose anchor carried the last operation applied (see
	// AnchoredOperation.Origin); "" when it was anchored here.
	AnchoredBy string
	// Operations is the number of anchored operations of the DID that resolution read, applied
	// or not: what resolving the DID costs, and what Profile.MaxOperationsPerDID bounds. It is 0
	// for an unpublished state.
	Operations int
	// CreateSequence is the anchor sequence number of the create that applied.
	CreateSequence uint64
	// CanonicalSequence is the anchor sequence number of the create or of the latest recover
	// that applied: the anchor Orb names the DID by (canonicalId), which an update or a
	// deactivate does not move.
	CanonicalSequence uint64
	// CanonicalTime is the whole second (Unix time) in which the anchor of CanonicalSequence was
	// issued (AnchoredOperation.Time), under the did:orb profile, whose rule on updates needs
	// it; 0 under the others, and where it is not known.
	CanonicalTime int64

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

// Origin is what resolution metadata reports as the DID's anchorOrigin, the domain that knows
// its latest anchor: the origin the DID declares, else the other domain whose anchor carried its
// last operation; "" (not reported) for a DID anchored here that declares none.
func (s *State) Origin() string {
	if s.AnchorOrigin != "" {
		return s.AnchorOrigin
	}
	return s.AnchoredBy
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

// CheckLimits tests an operation that passed Check against what one DID may grow to: the number
// of anchored operations (p.MaxOperationsPerDID) and the size of the DID's rendered resolution
// result in short form (p.MaxDocumentBytes) once the operation applies. s is nil for a create.
// A deactivate is always within the limits: it is the last operation a DID can take, so a DID
// at its operation limit can still be shut down.
func (s *State) CheckLimits(p Profile, op *Operation) error {
	if op.Type == OperationDeactivate {
		return nil
	}
	if s != nil {
		if limit := p.maxOperationsPerDID(); s.Operations >= limit {
			return Errorf(CodeTooManyOperations, "DID %s has %d operations, the most one DID may have; only a deactivate is accepted", op.Suffix, s.Operations)
		}
	}
	if op.Type == OperationCreate {
		_, err := CreateResponse(p, op)
		return err
	}
	next := &State{Suffix: op.Suffix, Published: true}
	switch op.Type {
	case OperationUpdate:
		next.RecoveryCommitment, next.Document = s.RecoveryCommitment, s.Document
		if op.Delta != nil {
			next.UpdateCommitment = op.Delta.UpdateCommitment
			next.Document = applyPatches(s.Document, op.Delta.Patches)
		}
	case OperationRecover:
		next.RecoveryCommitment = op.NextRecoveryCommitment
		if op.Delta != nil {
			next.UpdateCommitment = op.Delta.UpdateCommitment
			next.Document = applyPatches(Document{}, op.Delta.Patches)
		}
	}
	return checkDocumentSize(p, renderDocument(&DID{Method: p.method(), Suffix: op.Suffix}, next, Metadata{}))
}

// CreateResponse is CheckLimits of a create that also returns the create's response body
// (RenderCreateResponse): the document the limit measures is that response, so intake renders it
// once instead of twice.
func CreateResponse(p Profile, create *Operation) ([]byte, error) {
	body := RenderCreateResponse(p, create)
	if err := checkDocumentSize(p, body); err != nil {
		return nil, err
	}
	return body, nil
}

func checkDocumentSize(p Profile, doc []byte) error {
	if limit := p.maxDocumentBytes(); len(doc) > limit {
		return Errorf(CodeDocumentTooLarge, "the DID document would be %d bytes, more than the limit of %d", len(doc), limit)
	}
	return nil
}

func has(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// markUsed records a consumed commitment. Only the resolution that owns s calls it: a state
// returned by Resolve is never changed again.
func (s *State) markUsed(recovery bool, commitment string) {
	set := &s.usedUpdate
	if recovery {
		set = &s.usedRecovery
	}
	if *set == nil {
		*set = make(map[string]struct{})
	}
	(*set)[commitment] = struct{}{}
}

// applyCreate gives the state of a create: the recovery commitment always; the update
// commitment and the document only when the delta is present and matches deltaHash.
func applyCreate(op *Operation, seq uint64) *State {
	r := newResolution(anchoredOp{seq: seq, op: op}, false)
	r.st.Document = r.doc.document()
	return r.st
}
