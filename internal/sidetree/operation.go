package sidetree

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// OperationType is the "type" of an operation request.
type OperationType string

// The four operation types.
const (
	OperationCreate     OperationType = "create"
	OperationUpdate     OperationType = "update"
	OperationRecover    OperationType = "recover"
	OperationDeactivate OperationType = "deactivate"
)

// MaxAnchorOriginLength bounds an anchorOrigin value (a URL or a did:web DID).
const MaxAnchorOriginLength = 1024

// SuffixData is a create operation's suffixData.
type SuffixData struct {
	DeltaHash          string
	RecoveryCommitment string
	// AnchorOrigin is the optional anchorOrigin member Orb's clients send: the domain that
	// anchors the DID's operations. It is part of the suffix's hash.
	AnchorOrigin string
	Type         string // optional DID type; "" when absent
	canonical    []byte
}

// Operation is a parsed operation request.
//
// From ParseOperation it is fully validated: every field below is set for its type and the
// signature and delta hash have been checked. Inside Resolve, operations read from anchored
// batches are parsed with the reference implementation's lenient rules instead: Delta may then be
// nil for a create or recover whose delta is missing or invalid, and signatures and hashes are
// checked when the operation is applied.
type Operation struct {
	Type OperationType
	// Suffix is the DID suffix the operation is for (for a create: HashOut(JCS(suffixData))).
	Suffix string
	// Request is the request in compact JSON with a fixed member order (type, suffixData |
	// didSuffix, revealValue, signedData, delta), nested objects as received. This is what to
	// store and queue: the batch reader reconstructs exactly these bytes from batch files. It is
	// nil for an anchored operation parsed to resolve a DID, which came from those bytes.
	Request []byte
	// SuffixData is set for creates.
	SuffixData *SuffixData
	// Delta is set for creates, updates and recovers (see above for anchored operations).
	Delta *Delta
	// RevealValue, SignedData (the compact JWS, verbatim) and DeltaHash (signed) are set for
	// updates, recovers and deactivates; DeltaHash also for creates (from suffixData).
	RevealValue string
	SignedData  string
	DeltaHash   string
	// NextRecoveryCommitment is the recovery commitment the operation installs: suffixData's
	// for a create, the signed one for a recover.
	NextRecoveryCommitment string
	// AnchorOrigin is the anchorOrigin a create (in suffixData) or a recover (in its signed
	// payload) declares, as Orb's clients send it; "" when absent.
	AnchorOrigin string
	// AnchorFrom and AnchorUntil are the signed validity window (Unix seconds) of an update,
	// recover or deactivate under Orb's rules; 0 when absent.
	AnchorFrom, AnchorUntil int64

	key *signingKey
	jws *compactJWS
	// verified is set once the signature verified. Verification depends only on fields set at
	// parse time, so operations shared between resolutions (OperationCache) share it too.
	verified atomic.Bool
}

// KeyCommitment returns the commitment the operation's revealed key opens ("" for a create).
func (o *Operation) KeyCommitment() string {
	if o.key == nil {
		return ""
	}
	return o.key.commitment()
}

type parseMode uint8

const (
	// modeRequest is intake: the reference implementation's request rules plus signature,
	// delta hash and commitment-reuse checks.
	modeRequest parseMode = iota
	// modeAnchored is the reference implementation's parse of an operation rebuilt from batch
	// files: an unusable create or recover delta is treated as absent.
	modeAnchored
)

// ParseOperation validates an operation request (the body of POST /operations) statelessly: the
// reference implementation's property whitelists and value rules, the delta size limit, the
// compact JWS rules, the reveal value, the signature against the key in the JWS payload, the
// delta hash, and core-go's commitment-reuse rules. Every rejection is an *Error.
//
// Under Orb's rules (Profile.Orb) it also applies Orb's intake checks: the request's size, an
// anchorOrigin on every create and recover, and the signed anchorFrom/anchorUntil window
// against the current time.
func ParseOperation(body []byte, p Profile) (*Operation, error) {
	if p.MaxOperationSize > 0 && len(body) > p.MaxOperationSize {
		return nil, Errorf(CodeOperationTooLarge, "operation size[%d] exceeds maximum operation size[%d]", len(body), p.MaxOperationSize)
	}
	op, err := parseOperation(body, p, modeRequest)
	if err != nil {
		return nil, err
	}
	if p.Orb {
		if err := op.checkOrbIntake(time.Now()); err != nil {
			return nil, err
		}
	}
	return op, nil
}

// checkOrbIntake applies what Orb's parser checks of a request and not of an anchored
// operation, in its order: anchorOrigin must be specified on a create or recover (its validator
// refuses nil before it consults the allowed origins), a delta has patches, and now must lie in
// [anchorFrom, anchorUntil), where an anchorFrom alone stays valid for OrbAnchorWindow seconds.
func (op *Operation) checkOrbIntake(now time.Time) *Error {
	if (op.Type == OperationCreate || op.Type == OperationRecover) && op.AnchorOrigin == "" {
		return Errorf(CodeMissingAnchorOrigin, "anchor origin must be specified")
	}
	if op.Delta != nil && len(op.Delta.Patches) == 0 {
		return Errorf(CodeInvalidPatch, "missing patches")
	}
	from, until := op.AnchorFrom, op.AnchorUntil
	if from == 0 && until == 0 {
		return nil
	}
	if from != 0 && until == 0 {
		until = from + OrbAnchorWindow
	}
	if from > now.Unix() {
		return Errorf(CodeOperationEarly, "operation early: anchorFrom %d is after the server time %d", from, now.Unix())
	}
	if until <= now.Unix() {
		return Errorf(CodeOperationExpired, "operation expired: anchorUntil %d is not after the server time %d", until, now.Unix())
	}
	return nil
}

// ParseAnchoredOperation parses an operation request rebuilt from anchored batch files as
// resolution does (the reference implementation's lenient rules: see Operation), for a caller
// that parses once what it then resolves more than once (AnchoredOperation.Parsed).
func ParseAnchoredOperation(body []byte, p Profile) (*Operation, error) {
	op, err := parseOperation(body, p, modeAnchored)
	if err != nil {
		return nil, err
	}
	return op, nil
}

func parseOperation(body []byte, p Profile, mode parseMode) (*Operation, *Error) {
	v, err := jsontree.Parse(body)
	if err != nil {
		return nil, Wrap(CodeInvalidJSON, err, "")
	}
	if v.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidRequest, "an operation request must be a JSON object, not %s", v.TypeName())
	}
	t := v.Member("type")
	if t == nil || t.Kind != jsontree.String {
		return nil, Errorf(CodeUnknownOperationType, "type is missing or not a string")
	}
	switch typ := OperationType(t.Str); typ {
	case OperationCreate:
		return parseCreate(&v, p, mode)
	case OperationUpdate, OperationRecover, OperationDeactivate:
		return parseSigned(&v, typ, p, mode)
	default:
		return nil, Errorf(CodeUnknownOperationType, "type %s is not create, update, recover or deactivate", jsontree.QuoteExcerpt(t.Str))
	}
}

// requireMembers checks that obj has exactly the named members.
func requireMembers(obj *jsontree.Value, names []string, path string) *Error {
	if err := onlyMembers(obj, names, path); err != nil {
		return err
	}
	for _, n := range names {
		if obj.Member(n) == nil {
			return Errorf(CodeMissingProperty, "%s: member %q is required", path, n)
		}
	}
	return nil
}

func parseCreate(v *jsontree.Value, p Profile, mode parseMode) (*Operation, *Error) {
	var delta *Delta
	if mode == modeRequest {
		if err := requireMembers(v, []string{"type", "suffixData", "delta"}, "create request"); err != nil {
			return nil, err
		}
		var err *Error
		if delta, err = parseDelta(v.Member("delta"), p, "delta"); err != nil {
			return nil, err
		}
	} else {
		// The reference implementation counts members (exactly 3) and, for pruning
		// compatibility, treats an invalid delta as unavailable rather than failing.
		if len(v.Members) != 3 {
			return nil, Errorf(CodeInvalidRequest, "create request must have exactly 3 members")
		}
		delta, _ = parseDelta(v.Member("delta"), p, "delta")
	}
	sd, err := parseSuffixData(v.Member("suffixData"), "suffixData")
	if err != nil {
		return nil, err
	}
	op := &Operation{
		Type:                   OperationCreate,
		Suffix:                 HashOut(sd.canonical),
		SuffixData:             sd,
		Delta:                  delta,
		DeltaHash:              sd.DeltaHash,
		NextRecoveryCommitment: sd.RecoveryCommitment,
		AnchorOrigin:           sd.AnchorOrigin,
	}
	if mode == modeRequest {
		if got := delta.Hash(); got != sd.DeltaHash {
			return nil, Errorf(CodeDeltaHashMismatch, "suffixData.deltaHash is %s but the delta hashes to %s", sd.DeltaHash, got)
		}
		// core-go's rule: one key must not serve as both the recovery and the update key.
		if delta.UpdateCommitment == sd.RecoveryCommitment {
			return nil, Errorf(CodeCommitmentReuse, "delta.updateCommitment equals suffixData.recoveryCommitment: one key cannot be both the update and the recovery key")
		}
	}
	if mode == modeRequest {
		op.Request = buildRequest(op, v.Member("delta"))
	}
	return op, nil
}

// parseSuffixData applies InputValidator.validateSuffixData: an object with only deltaHash,
// recoveryCommitment and an optional type of at most 4 base64url characters (ION), plus the
// optional anchorOrigin string of Orb's protocol.
func parseSuffixData(v *jsontree.Value, path string) (*SuffixData, *Error) {
	if v == nil {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	if v.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidProperty, "%s must be an object, not %s", path, v.TypeName())
	}
	if err := onlyMembers(v, []string{"deltaHash", "recoveryCommitment", "anchorOrigin", "type"}, path); err != nil {
		return nil, err
	}
	sd := &SuffixData{}
	var err *Error
	if sd.DeltaHash, err = checkMultihash(v.Member("deltaHash"), path+".deltaHash"); err != nil {
		return nil, err
	}
	if sd.RecoveryCommitment, err = checkMultihash(v.Member("recoveryCommitment"), path+".recoveryCommitment"); err != nil {
		return nil, err
	}
	if sd.AnchorOrigin, err = parseAnchorOrigin(v.Member("anchorOrigin"), path+".anchorOrigin", CodeInvalidProperty); err != nil {
		return nil, err
	}
	if t := v.Member("type"); t != nil {
		if t.Kind != jsontree.String || len(t.Str) > 4 || !isBase64URL(t.Str) {
			return nil, Errorf(CodeInvalidProperty, "%s.type must be a string of 1 to 4 base64url characters", path)
		}
		sd.Type = t.Str
	}
	sd.canonical = v.AppendCanonical(nil)
	return sd, nil
}

// parseAnchorOrigin reads an optional anchorOrigin member: absent, or a non-empty string of at
// most MaxAnchorOriginLength bytes. Orb's parser takes any JSON value and its validator then
// refuses everything but a string; refusing here keeps a value no one accepts out of batches.
func parseAnchorOrigin(v *jsontree.Value, path string, code Code) (string, *Error) {
	if v == nil {
		return "", nil
	}
	if v.Kind != jsontree.String || v.Str == "" || len(v.Str) > MaxAnchorOriginLength {
		return "", Errorf(code, "%s must be a string of 1 to %d bytes", path, MaxAnchorOriginLength)
	}
	return v.Str, nil
}

// signedShape returns, for a signed operation type, the request members and the exact JWS
// payload members; ok is false for other types.
func signedShape(typ OperationType) (request, payload []string, ok bool) {
	switch typ {
	case OperationUpdate:
		return []string{"type", "didSuffix", "revealValue", "signedData", "delta"}, []string{"updateKey", "deltaHash"}, true
	case OperationRecover:
		return []string{"type", "didSuffix", "revealValue", "signedData", "delta"}, []string{"recoveryCommitment", "recoveryKey", "deltaHash"}, true
	case OperationDeactivate:
		return []string{"type", "didSuffix", "revealValue", "signedData"}, []string{"didSuffix", "recoveryKey"}, true
	}
	return nil, nil, false
}

func parseSigned(v *jsontree.Value, typ OperationType, p Profile, mode parseMode) (*Operation, *Error) {
	requestMembers, payloadMembers, _ := signedShape(typ)
	path := string(typ) + " request"
	if mode == modeRequest {
		if err := requireMembers(v, requestMembers, path); err != nil {
			return nil, err
		}
	} else if err := onlyMembers(v, requestMembers, path); err != nil {
		return nil, err
	}
	op := &Operation{Type: typ}
	var err *Error
	if op.Suffix, err = checkMultihash(v.Member("didSuffix"), "didSuffix"); err != nil {
		return nil, err
	}
	if op.RevealValue, err = checkMultihash(v.Member("revealValue"), "revealValue"); err != nil {
		return nil, err
	}
	if op.jws, err = parseCompactJWS(v.Member("signedData"), p, "signedData"); err != nil {
		return nil, err
	}
	op.SignedData = op.jws.raw
	if err = op.parsePayload(payloadMembers, p); err != nil {
		return nil, err
	}
	if reveal := op.key.revealValue(); reveal != op.RevealValue {
		return nil, Errorf(CodeRevealValueMismatch, "revealValue is %s but the revealed key hashes to %s", op.RevealValue, reveal)
	}
	if typ != OperationDeactivate {
		op.Delta, err = parseDelta(v.Member("delta"), p, "delta")
		if err != nil && (mode == modeRequest || typ == OperationUpdate) {
			return nil, err
		}
	}
	if mode == modeRequest {
		if err = op.checkRequest(); err != nil {
			return nil, err
		}
	}
	if mode == modeRequest {
		op.Request = buildRequest(op, v.Member("delta"))
	}
	return op, nil
}

// parsePayload validates the JWS payload of an update, recover or deactivate.
func (op *Operation) parsePayload(members []string, p Profile) *Error {
	payload := &op.jws.payload
	const path = "signedData payload"
	var optional []string
	if op.Type == OperationRecover {
		// Orb's clients may declare the DID's anchor origin anew when they recover it.
		optional = []string{"anchorOrigin"}
	}
	if p.Orb {
		// Orb's signed data may bound when the operation may be anchored.
		optional = append(optional, "anchorFrom", "anchorUntil")
	}
	if err := exactMembers(payload, members, optional, CodeInvalidSignedData, path); err != nil {
		return err
	}
	keyName := "recoveryKey"
	switch op.Type {
	case OperationUpdate:
		keyName = "updateKey"
	case OperationDeactivate:
		// Checked before the key, as in the reference implementation.
		if s := payload.Member("didSuffix"); s.Kind != jsontree.String || s.Str != op.Suffix {
			return Errorf(CodeDIDSuffixMismatch, "%s.didSuffix does not equal the request's didSuffix %s", path, op.Suffix)
		}
	}
	var err *Error
	if op.key, err = parseSigningKey(payload.Member(keyName), p, op.jws.alg, path+"."+keyName); err != nil {
		return err
	}
	if p.Orb {
		if op.AnchorFrom, err = anchorTime(payload.Member("anchorFrom"), path+".anchorFrom"); err != nil {
			return err
		}
		if op.AnchorUntil, err = anchorTime(payload.Member("anchorUntil"), path+".anchorUntil"); err != nil {
			return err
		}
	}
	if op.Type == OperationDeactivate {
		return nil
	}
	if op.DeltaHash, err = checkMultihash(payload.Member("deltaHash"), path+".deltaHash"); err != nil {
		return err
	}
	if op.Type == OperationRecover {
		if op.NextRecoveryCommitment, err = checkMultihash(payload.Member("recoveryCommitment"), path+".recoveryCommitment"); err != nil {
			return err
		}
		if op.AnchorOrigin, err = parseAnchorOrigin(payload.Member("anchorOrigin"), path+".anchorOrigin", CodeInvalidSignedData); err != nil {
			return err
		}
	}
	return nil
}

// anchorTime reads an optional anchorFrom or anchorUntil: Unix seconds, a non-negative integer.
func anchorTime(v *jsontree.Value, path string) (int64, *Error) {
	if v == nil {
		return 0, nil
	}
	if v.Kind != jsontree.Number {
		return 0, Errorf(CodeInvalidSignedData, "%s must be a number of Unix seconds", path)
	}
	n, err := strconv.ParseInt(v.Str, 10, 64)
	if err != nil || n < 0 {
		return 0, Errorf(CodeInvalidSignedData, "%s must be a non-negative integer of Unix seconds", path)
	}
	return n, nil
}

// checkRequest runs the intake checks the reference implementation leaves to resolution time:
// signature and delta hash, plus core-go's key-reuse rules.
func (op *Operation) checkRequest() *Error {
	if err := op.verifySignature(); err != nil {
		return err
	}
	if op.Type == OperationDeactivate {
		return nil
	}
	if got := op.Delta.Hash(); got != op.DeltaHash {
		return Errorf(CodeDeltaHashMismatch, "signed deltaHash is %s but the delta hashes to %s", op.DeltaHash, got)
	}
	opens := op.key.commitment()
	switch op.Type {
	case OperationUpdate:
		if op.Delta.UpdateCommitment == opens {
			return Errorf(CodeCommitmentReuse, "delta.updateCommitment commits to the update key being revealed")
		}
	case OperationRecover:
		if op.Delta.UpdateCommitment == op.NextRecoveryCommitment {
			return Errorf(CodeCommitmentReuse, "delta.updateCommitment equals the next recoveryCommitment: one key cannot be both the update and the recovery key")
		}
		if op.NextRecoveryCommitment == opens {
			return Errorf(CodeCommitmentReuse, "the next recoveryCommitment commits to the recovery key being revealed")
		}
	}
	return nil
}

// verifySignature checks the JWS with the revealed key once. Concurrent calls may both verify;
// they reach the same answer.
func (op *Operation) verifySignature() *Error {
	if op.verified.Load() {
		return nil
	}
	if err := op.key.verify(op.jws.signingInput, op.jws.signature); err != nil {
		return err
	}
	op.verified.Store(true)
	return nil
}

// buildRequest writes the stored form of the request (see Operation.Request). delta is the raw
// delta member, written as received even when the anchored parse found it unusable.
func buildRequest(op *Operation, delta *jsontree.Value) []byte {
	n := 160
	if op.Delta != nil {
		n += len(op.Delta.json)
	}
	n += len(op.SignedData)
	buf := make([]byte, 0, n)
	buf = append(buf, `{"type":`...)
	buf = jsontree.AppendQuoted(buf, string(op.Type))
	if op.Type == OperationCreate {
		buf = append(buf, `,"suffixData":`...)
		buf = op.SuffixData.appendJSON(buf)
	} else {
		buf = append(buf, `,"didSuffix":`...)
		buf = jsontree.AppendQuoted(buf, op.Suffix)
		buf = append(buf, `,"revealValue":`...)
		buf = jsontree.AppendQuoted(buf, op.RevealValue)
		buf = append(buf, `,"signedData":`...)
		buf = jsontree.AppendQuoted(buf, op.SignedData)
	}
	switch {
	case op.Delta != nil:
		buf = append(buf, `,"delta":`...)
		buf = append(buf, op.Delta.json...)
	case delta != nil && op.Type != OperationDeactivate:
		buf = append(buf, `,"delta":`...)
		buf = delta.AppendCompact(buf)
	}
	return append(buf, '}')
}

// appendJSON writes suffixData with the member order of the reference implementation's core
// index file writer (deltaHash, recoveryCommitment, type), with anchorOrigin before type where
// Orb's writer puts it.
func (sd *SuffixData) appendJSON(buf []byte) []byte {
	buf = append(buf, `{"deltaHash":`...)
	buf = jsontree.AppendQuoted(buf, sd.DeltaHash)
	buf = append(buf, `,"recoveryCommitment":`...)
	buf = jsontree.AppendQuoted(buf, sd.RecoveryCommitment)
	if sd.AnchorOrigin != "" {
		buf = append(buf, `,"anchorOrigin":`...)
		buf = jsontree.AppendQuoted(buf, sd.AnchorOrigin)
	}
	if sd.Type != "" {
		buf = append(buf, `,"type":`...)
		buf = jsontree.AppendQuoted(buf, sd.Type)
	}
	return append(buf, '}')
}

// JSON returns suffixData as batch files carry it.
func (sd *SuffixData) JSON() []byte { return sd.appendJSON(nil) }
