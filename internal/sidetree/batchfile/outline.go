package batchfile

import "github.com/anchord/anchord/internal/sidetree"

// Outline is the map of an anchored batch that a reader needs to show it rather than process
// it: the URIs of its files and which DID each operation is for, in anchor order. It is read
// from the two index files alone, so it costs a fraction of Read: no proof is parsed and no
// delta is fetched.
type Outline struct {
	Anchor Anchor
	// Files are the batch's files that the index files name, core index first. A file the
	// batch does not have is absent.
	Files []FileRef
	// Operations are in anchor order (creates, recovers, deactivates, updates), Position
	// numbered as Read numbers them.
	Operations []OutlineOperation
	// ProvisionalErr is what Read's Batch.ProvisionalErr would be for a problem with the
	// provisional index file: its updates are then missing from Operations, and the files it
	// names from Files. Problems of the provisional proof and chunk files are not seen here.
	ProvisionalErr error
}

// FileRef names one batch file.
type FileRef struct {
	Kind Kind
	URI  string
}

// OutlineOperation is one operation of an Outline.
type OutlineOperation struct {
	Position int
	Type     sidetree.OperationType
	Suffix   string
}

// ReadOutline reads the outline of the batch an anchor string points to. The anchor string and
// the core index file are checked as Read checks them, and the errors are the same: a
// *sidetree.Error or a *FetchError. The provisional index file is checked against the core
// index file as Read does, and its problems go to Outline.ProvisionalErr.
func ReadOutline(anchorString string, fetch FetchFunc, l Limits) (*Outline, error) {
	l = l.withDefaults()
	anchor, core, err := readCore(anchorString, fetch, l)
	if err != nil {
		return nil, err
	}
	o := &Outline{Anchor: anchor, Files: []FileRef{{Kind: CoreIndex, URI: anchor.CoreIndexURI}}}
	if core.coreProofURI != "" {
		o.Files = append(o.Files, FileRef{Kind: CoreProof, URI: core.coreProofURI})
	}
	o.Operations = make([]OutlineOperation, 0, core.count())
	add := func(t sidetree.OperationType, suffix string) {
		o.Operations = append(o.Operations, OutlineOperation{Position: len(o.Operations), Type: t, Suffix: suffix})
	}
	for _, c := range core.creates {
		add(sidetree.OperationCreate, c.suffix)
	}
	for _, r := range core.recovers {
		add(sidetree.OperationRecover, r.suffix)
	}
	for _, r := range core.deactivates {
		add(sidetree.OperationDeactivate, r.suffix)
	}
	index, err := outlineProvisional(anchor, core, fetch, l)
	if err != nil {
		o.ProvisionalErr = err
		return o, nil
	}
	if index == nil {
		return o, nil
	}
	o.Files = append(o.Files, FileRef{Kind: ProvisionalIndex, URI: core.provisionalIndexURI})
	if index.proofURI != "" {
		o.Files = append(o.Files, FileRef{Kind: ProvisionalProof, URI: index.proofURI})
	}
	o.Files = append(o.Files, FileRef{Kind: Chunk, URI: index.chunkURI})
	for _, u := range index.updates {
		add(sidetree.OperationUpdate, u.suffix)
	}
	return o, nil
}

// outlineProvisional reads the provisional index file and applies Read's checks of it against
// the anchor string and the core index file; nil when the batch has none.
func outlineProvisional(anchor Anchor, core *coreIndexFile, fetch FetchFunc, l Limits) (*provisionalIndexFile, error) {
	if core.provisionalIndexURI == "" {
		return nil, nil
	}
	data, err := fetchFile(fetch, ProvisionalIndex, core.provisionalIndexURI, l)
	if err != nil {
		return nil, err
	}
	index, err := parseProvisionalIndexFile(data, l)
	if err != nil {
		return nil, err
	}
	if max := anchor.Count - core.count(); len(index.updates) > max {
		return nil, sidetree.Errorf(sidetree.CodeOperationCountExceedsLimit, "provisional index file has %d updates, the anchor string pays for %d", len(index.updates), max)
	}
	inCore := make(map[string]bool, core.count())
	for _, s := range core.suffixes() {
		inCore[s] = true
	}
	for _, u := range index.updates {
		if inCore[u.suffix] {
			return nil, sidetree.Errorf(sidetree.CodeInvalidProvisionalIndex, "DID %s has an operation in the core index file too", u.suffix)
		}
	}
	return index, nil
}

// FilesOf returns the files of the outline that carry data of an operation of type t: the
// index file that lists it, the proof file that holds its signature, and the chunk file that
// holds its delta. The core index file, which anchors the whole batch, comes first whatever t.
func (o *Outline) FilesOf(t sidetree.OperationType) []FileRef {
	var want map[Kind]bool
	switch t {
	case sidetree.OperationCreate:
		want = map[Kind]bool{CoreIndex: true, Chunk: true}
	case sidetree.OperationRecover:
		want = map[Kind]bool{CoreIndex: true, CoreProof: true, Chunk: true}
	case sidetree.OperationDeactivate:
		want = map[Kind]bool{CoreIndex: true, CoreProof: true}
	case sidetree.OperationUpdate:
		want = map[Kind]bool{CoreIndex: true, ProvisionalIndex: true, ProvisionalProof: true, Chunk: true}
	}
	var out []FileRef
	for _, f := range o.Files {
		if want[f.Kind] {
			out = append(out, f)
		}
	}
	return out
}
