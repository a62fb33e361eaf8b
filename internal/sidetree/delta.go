package sidetree

import "github.com/anchord/anchord/internal/sidetree/jsontree"

// Delta is a validated operation delta: {patches, updateCommitment}.
type Delta struct {
	Patches          []Patch
	UpdateCommitment string
	json             []byte // compact form, as stored in chunk files
	canonical        []byte // JCS form, input of the delta hash and the size limit
	// hash is HashOut(canonical), computed once at parse: resolution compares it each time it
	// applies the operation, and a cached parse (OperationCache) is applied many times.
	hash string
}

// JSON returns the delta in compact JSON with its members in the order received: the form
// chunk files and stored requests carry.
func (d *Delta) JSON() []byte { return d.json }

// Canonical returns JCS(delta).
func (d *Delta) Canonical() []byte { return d.canonical }

// Hash returns HashOut(JCS(delta)), the value a deltaHash must equal.
func (d *Delta) Hash() string { return d.hash }

// parseDelta applies the reference implementation's Delta.validateDelta: present, canonical size
// within the limit (checked before the schema, as there), a non-array object with only patches
// and updateCommitment, valid patches, and an update commitment multihash.
func parseDelta(v *jsontree.Value, p Profile, path string) (*Delta, *Error) {
	if v == nil || v.Kind == jsontree.Null {
		return nil, Errorf(CodeMissingProperty, "%s is required", path)
	}
	// Typical deltas are a few hundred bytes; sizing the buffers avoids most regrowth.
	canonical := v.AppendCanonical(make([]byte, 0, 512))
	if limit := p.maxDeltaSize(); len(canonical) > limit {
		return nil, Errorf(CodeDeltaTooLarge, "%s is %d canonical bytes, more than the limit of %d", path, len(canonical), limit)
	}
	if v.Kind != jsontree.Object {
		return nil, Errorf(CodeInvalidProperty, "%s must be an object, not %s", path, v.TypeName())
	}
	if err := onlyMembers(v, []string{"patches", "updateCommitment"}, path); err != nil {
		return nil, err
	}
	patches, err := parsePatches(v.Member("patches"), p, path+".patches")
	if err != nil {
		return nil, err
	}
	commitment, err := checkMultihash(v.Member("updateCommitment"), path+".updateCommitment")
	if err != nil {
		return nil, err
	}
	return &Delta{
		Patches: patches, UpdateCommitment: commitment,
		json: v.AppendCompact(make([]byte, 0, len(canonical))), canonical: canonical, hash: HashOut(canonical),
	}, nil
}
