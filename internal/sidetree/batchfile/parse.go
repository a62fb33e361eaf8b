package batchfile

import (
	"strconv"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// The parsers take a file's decompressed JSON and apply the reference implementation's checks of
// that file alone (CoreIndexFile.parse, CoreProofFile.parse, ProvisionalIndexFile.parse,
// ProvisionalProofFile.parse, ChunkFile.parse). Checks between files are in read.go. Beyond the
// reference implementation, every file and every "operations" member must be a JSON object (it
// lets some non-objects through to fail later, or to count as empty).

type createRef struct {
	suffixData []byte // compact JSON as in the file
	suffix     string
}

type reference struct {
	suffix, reveal string
}

type coreIndexFile struct {
	provisionalIndexURI string // "" when absent
	coreProofURI        string // "" when absent
	creates             []createRef
	recovers            []reference
	deactivates         []reference
}

func (f *coreIndexFile) count() int { return len(f.creates) + len(f.recovers) + len(f.deactivates) }

// parseObject parses a file and requires a JSON object with members only from allowed.
func parseObject(data []byte, code sidetree.Code, allowed ...string) (*jsontree.Value, error) {
	v, err := jsontree.Parse(data)
	if err != nil {
		return nil, sidetree.Wrap(code, err, "not JSON")
	}
	if v.Kind != jsontree.Object {
		return nil, sidetree.Errorf(code, "must be a JSON object, not %s", v.TypeName())
	}
	if err := onlyMembers(&v, code, "file", allowed...); err != nil {
		return nil, err
	}
	return &v, nil
}

func onlyMembers(v *jsontree.Value, code sidetree.Code, path string, allowed ...string) error {
	for _, m := range v.Members {
		ok := false
		for _, a := range allowed {
			ok = ok || m.Name == a
		}
		if !ok {
			return sidetree.Errorf(code, "%s: member %q is not allowed", path, m.Name)
		}
	}
	return nil
}

// objectMember returns an optional member that must be an object when present.
func objectMember(v *jsontree.Value, name string, code sidetree.Code) (*jsontree.Value, error) {
	m := v.Member(name)
	if m != nil && m.Kind != jsontree.Object {
		return nil, sidetree.Errorf(code, "%s must be an object, not %s", name, m.TypeName())
	}
	return m, nil
}

// arrayMember returns an optional member that must be an array when present.
func arrayMember(v *jsontree.Value, name, path string, code sidetree.Code) ([]jsontree.Value, bool, error) {
	m := v.Member(name)
	if m == nil {
		return nil, false, nil
	}
	if m.Kind != jsontree.Array {
		return nil, true, sidetree.Errorf(code, "%s.%s must be an array, not %s", path, name, m.TypeName())
	}
	return m.Elems, true, nil
}

// uriMember validates an optional CAS URI member (InputValidator.validateCasFileUri).
func uriMember(v *jsontree.Value, name string, code sidetree.Code, l Limits) (string, error) {
	m := v.Member(name)
	if m == nil {
		return "", nil
	}
	if m.Kind != jsontree.String {
		return "", sidetree.Errorf(code, "%s must be a string, not %s", name, m.TypeName())
	}
	if err := checkURI(m.Str, l); err != nil {
		return "", sidetree.Wrap(code, err, "%s", name)
	}
	return m.Str, nil
}

func parseCoreIndexFile(data []byte, l Limits) (*coreIndexFile, error) {
	const code = sidetree.CodeInvalidCoreIndexFile
	v, err := parseObject(data, code, "provisionalIndexFileUri", "coreProofFileUri", "operations", "writerLockId")
	if err != nil {
		return nil, err
	}
	// anchord writes no value time lock and verifies none (it does not run on Bitcoin); a lock
	// id from another writer is checked for shape only.
	if w := v.Member("writerLockId"); w != nil && (w.Kind != jsontree.String || len(w.Str) > 200) {
		return nil, sidetree.Errorf(code, "writerLockId must be a string of at most 200 bytes")
	}
	f := &coreIndexFile{}
	ops, err := objectMember(v, "operations", code)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	if ops != nil {
		if err := onlyMembers(ops, code, "operations", "create", "recover", "deactivate"); err != nil {
			return nil, err
		}
		creates, _, err := arrayMember(ops, "create", "operations", code)
		if err != nil {
			return nil, err
		}
		for i := range creates {
			path := "operations.create[" + strconv.Itoa(i) + "]"
			e := &creates[i]
			if e.Kind != jsontree.Object {
				return nil, sidetree.Errorf(code, "%s must be an object", path)
			}
			if err := onlyMembers(e, code, path, "suffixData"); err != nil {
				return nil, err
			}
			sdv := e.Member("suffixData")
			_, suffix, err := sidetree.ParseSuffixDataValue(sdv, path+".suffixData")
			if err != nil {
				return nil, sidetree.Wrap(code, err, "")
			}
			f.creates = append(f.creates, createRef{suffixData: sdv.AppendCompact(nil), suffix: suffix})
		}
		if f.recovers, err = parseReferences(ops, "recover", "operations", code); err != nil {
			return nil, err
		}
		if f.deactivates, err = parseReferences(ops, "deactivate", "operations", code); err != nil {
			return nil, err
		}
		// No DID may appear twice across the three arrays.
		for _, s := range f.suffixes() {
			if seen[s] {
				return nil, sidetree.Errorf(code, "DID %s has more than one operation", s)
			}
			seen[s] = true
		}
	}
	if f.provisionalIndexURI, err = uriMember(v, "provisionalIndexFileUri", code, l); err != nil {
		return nil, err
	}
	if v.Member("provisionalIndexFileUri") == nil && len(f.creates)+len(f.recovers) > 0 {
		return nil, sidetree.Errorf(code, "provisionalIndexFileUri is required with %d creates and %d recovers", len(f.creates), len(f.recovers))
	}
	hasProof := v.Member("coreProofFileUri") != nil
	switch {
	case len(f.recovers)+len(f.deactivates) > 0 && !hasProof:
		return nil, sidetree.Errorf(code, "coreProofFileUri is required with recovers or deactivates")
	case len(f.recovers)+len(f.deactivates) == 0 && hasProof:
		return nil, sidetree.Errorf(code, "coreProofFileUri is not allowed without recovers or deactivates")
	}
	if f.coreProofURI, err = uriMember(v, "coreProofFileUri", code, l); err != nil {
		return nil, err
	}
	return f, nil
}

// suffixes lists the DIDs of the core index file's operations in position order.
func (f *coreIndexFile) suffixes() []string {
	out := make([]string, 0, f.count())
	for _, c := range f.creates {
		out = append(out, c.suffix)
	}
	for _, r := range f.recovers {
		out = append(out, r.suffix)
	}
	for _, r := range f.deactivates {
		out = append(out, r.suffix)
	}
	return out
}

func parseReferences(parent *jsontree.Value, name, path string, code sidetree.Code) ([]reference, error) {
	elems, _, err := arrayMember(parent, name, path, code)
	if err != nil {
		return nil, err
	}
	refs := make([]reference, 0, len(elems))
	for i := range elems {
		s, r, err := sidetree.ParseReferenceValue(&elems[i], path+"."+name+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, sidetree.Wrap(code, err, "")
		}
		refs = append(refs, reference{suffix: s, reveal: r})
	}
	return refs, nil
}

type coreProofFile struct {
	recovers, deactivates []string // compact JWS
}

// parseCoreProofFile needs the deactivate suffixes of the core index file: each deactivate
// proof's payload must name the DID at the same position.
func parseCoreProofFile(data []byte, p sidetree.Profile, deactivateSuffixes []string) (*coreProofFile, error) {
	const code = sidetree.CodeInvalidCoreProofFile
	v, err := parseObject(data, code, "operations")
	if err != nil {
		return nil, err
	}
	ops := v.Member("operations")
	if ops == nil || ops.Kind != jsontree.Object {
		return nil, sidetree.Errorf(code, "operations must be an object")
	}
	if err := onlyMembers(ops, code, "operations", "recover", "deactivate"); err != nil {
		return nil, err
	}
	f := &coreProofFile{}
	if f.recovers, err = parseProofs(ops, sidetree.OperationRecover, p, nil, code); err != nil {
		return nil, err
	}
	if f.deactivates, err = parseProofs(ops, sidetree.OperationDeactivate, p, deactivateSuffixes, code); err != nil {
		return nil, err
	}
	if len(f.recovers)+len(f.deactivates) == 0 {
		return nil, sidetree.Errorf(code, "the file has no proofs")
	}
	return f, nil
}

func parseProofs(ops *jsontree.Value, typ sidetree.OperationType, p sidetree.Profile, suffixes []string, code sidetree.Code) ([]string, error) {
	name := string(typ)
	elems, _, err := arrayMember(ops, name, "operations", code)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(elems))
	for i := range elems {
		path := "operations." + name + "[" + strconv.Itoa(i) + "]"
		e := &elems[i]
		// {"signedData": <jws>} in the reference implementation's layout; the JWS alone in
		// Orb's (its proof files are arrays of strings). Each reader takes its own layout only,
		// as the reference implementation and Orb do.
		signedData, signedPath := e, path
		switch {
		case p.OrbBatchFiles && e.Kind != jsontree.String:
			return nil, sidetree.Errorf(code, "%s must be a string (did:orb's layout)", path)
		case !p.OrbBatchFiles:
			if e.Kind != jsontree.Object {
				return nil, sidetree.Errorf(code, "%s must be an object", path)
			}
			if err := onlyMembers(e, code, path, "signedData"); err != nil {
				return nil, err
			}
			signedData, signedPath = e.Member("signedData"), path+".signedData"
		}
		expected := ""
		if i < len(suffixes) {
			expected = suffixes[i]
		}
		jws, err := sidetree.ParseProofValue(typ, signedData, p, expected, signedPath)
		if err != nil {
			return nil, sidetree.Wrap(code, err, "")
		}
		out = append(out, jws)
	}
	return out, nil
}

type provisionalIndexFile struct {
	chunkURI string
	proofURI string // "" when absent
	updates  []reference
}

func parseProvisionalIndexFile(data []byte, l Limits) (*provisionalIndexFile, error) {
	const code = sidetree.CodeInvalidProvisionalIndex
	v, err := parseObject(data, code, "chunks", "operations", "provisionalProofFileUri")
	if err != nil {
		return nil, err
	}
	chunks, present, err := arrayMember(v, "chunks", "file", code)
	if err != nil {
		return nil, err
	}
	if !present || len(chunks) != 1 {
		return nil, sidetree.Errorf(code, "chunks must be an array of exactly one element")
	}
	chunk := &chunks[0]
	if chunk.Kind != jsontree.Object || len(chunk.Members) != 1 || chunk.Member("chunkFileUri") == nil {
		return nil, sidetree.Errorf(code, "chunks[0] must be exactly {\"chunkFileUri\": …}")
	}
	f := &provisionalIndexFile{}
	if f.chunkURI, err = uriMember(chunk, "chunkFileUri", code, l); err != nil {
		return nil, err
	}
	ops, err := objectMember(v, "operations", code)
	if err != nil {
		return nil, err
	}
	if ops != nil {
		if err := onlyMembers(ops, code, "operations", "update"); err != nil {
			return nil, err
		}
		if ops.Member("update") == nil {
			return nil, sidetree.Errorf(code, "operations.update must be an array")
		}
		if f.updates, err = parseReferences(ops, "update", "operations", code); err != nil {
			return nil, err
		}
		seen := make(map[string]bool, len(f.updates))
		for _, u := range f.updates {
			if seen[u.suffix] {
				return nil, sidetree.Errorf(code, "DID %s has more than one update", u.suffix)
			}
			seen[u.suffix] = true
		}
	}
	hasProof := v.Member("provisionalProofFileUri") != nil
	switch {
	case len(f.updates) > 0 && !hasProof:
		return nil, sidetree.Errorf(code, "provisionalProofFileUri is required with updates")
	case len(f.updates) == 0 && hasProof:
		return nil, sidetree.Errorf(code, "provisionalProofFileUri is not allowed without updates")
	}
	if f.proofURI, err = uriMember(v, "provisionalProofFileUri", code, l); err != nil {
		return nil, err
	}
	return f, nil
}

func parseProvisionalProofFile(data []byte, p sidetree.Profile) ([]string, error) {
	const code = sidetree.CodeInvalidProvisionalProof
	v, err := parseObject(data, code, "operations")
	if err != nil {
		return nil, err
	}
	ops := v.Member("operations")
	if ops == nil || ops.Kind != jsontree.Object {
		return nil, sidetree.Errorf(code, "operations must be an object")
	}
	if err := onlyMembers(ops, code, "operations", "update"); err != nil {
		return nil, err
	}
	if u := ops.Member("update"); u == nil || u.Kind != jsontree.Array {
		return nil, sidetree.Errorf(code, "operations.update must be an array")
	}
	proofs, err := parseProofs(ops, sidetree.OperationUpdate, p, nil, code)
	if err != nil {
		return nil, err
	}
	if len(proofs) == 0 {
		return nil, sidetree.Errorf(code, "the file has no proofs")
	}
	return proofs, nil
}

// parseChunkFile returns each delta in compact JSON. One invalid delta invalidates the file.
func parseChunkFile(data []byte, p sidetree.Profile) ([][]byte, error) {
	const code = sidetree.CodeInvalidChunkFile
	v, err := parseObject(data, code, "deltas")
	if err != nil {
		return nil, err
	}
	elems, present, err := arrayMember(v, "deltas", "file", code)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, sidetree.Errorf(code, "deltas must be an array")
	}
	deltas := make([][]byte, 0, len(elems))
	for i := range elems {
		d, err := sidetree.ParseDeltaValue(&elems[i], p, "deltas["+strconv.Itoa(i)+"]")
		if err != nil {
			return nil, sidetree.Wrap(code, err, "")
		}
		deltas = append(deltas, d.JSON())
	}
	return deltas, nil
}
