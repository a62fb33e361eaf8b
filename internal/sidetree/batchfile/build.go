package batchfile

import (
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// Kind names a batch file.
type Kind string

// The five batch files.
const (
	CoreIndex        Kind = "core index file"
	CoreProof        Kind = "core proof file"
	ProvisionalIndex Kind = "provisional index file"
	ProvisionalProof Kind = "provisional proof file"
	Chunk            Kind = "chunk file"
	// Count stands for the batch's operation count in a CapacityError.
	Count Kind = "operation count"
)

// File is one gzip-compressed batch file and its CAS URI.
type File struct {
	Kind Kind
	URI  string
	// Ref is how the other files name this one: URI, unless Limits.ReferenceFunc says otherwise.
	Ref  string
	Data []byte
}

// Files are the files of one batch. Absent files are nil.
type Files struct {
	Anchor Anchor
	// Operations are the batch's operations as Read returns them from these files: anchor
	// order and positions, requests byte for byte (Sequence left zero), each with the parse it
	// was built from (Parsed), which Read leaves nil. A writer that indexes its own batch can use
	// them instead of reading the files back.
	Operations []sidetree.AnchoredOperation

	CoreIndex        *File
	CoreProof        *File
	ProvisionalIndex *File
	ProvisionalProof *File
	Chunk            *File
}

// List returns the present files in the order they must be written to CAS: each file's URI
// is referenced by a later one, and the core index file (the one anchored) comes last.
func (f *Files) List() []File {
	var out []File
	for _, p := range []*File{f.CoreProof, f.ProvisionalProof, f.Chunk, f.ProvisionalIndex, f.CoreIndex} {
		if p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// AddressFunc returns the CAS URI of a file's bytes (e.g. cas.AddressFunc(cas.CIDv0)).
type AddressFunc func(data []byte) string

// ErrNoOperations is returned by Build for an empty batch.
var ErrNoOperations = errors.New("batchfile: no operations to build")

// DuplicateSuffixError reports two operations for one DID in a batch; readers discard a batch
// that has them, so the writer must defer one of the two.
type DuplicateSuffixError struct {
	Suffix string
	First  int // index in the ops given to Build
	Second int
}

func (e *DuplicateSuffixError) Error() string {
	return fmt.Sprintf("batchfile: operations %d and %d are both for DID %s; one operation per DID per batch", e.First, e.Second, e.Suffix)
}

// CapacityError reports a batch that does not fit: a compressed file above its cap, or more
// operations than MaxOperations (Kind Count). Fit is a number of leading operations that does
// fit (verified by building it; within a few percent of the largest such number), so the writer
// can cut ops[:Fit] and keep the rest for the next batch.
type CapacityError struct {
	Kind  Kind
	Size  int // compressed bytes, or operations for Kind Count
	Limit int
	Fit   int
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("batchfile: %s is %d, over the limit of %d; the first %d operations fit", e.Kind, e.Size, e.Limit, e.Fit)
}

// Build writes the batch files of ops in the reference implementation's layout and returns them
// with their CAS URIs (from addr) and the anchor string. Operations must come from
// sidetree.ParseOperation. Within each type the given order is kept; positions in the batch are
// creates, recovers, deactivates, updates, and the chunk file holds the deltas of creates, then
// recovers, then updates. Empty arrays and absent files are omitted, as the reference
// implementation does (except that its core proof file always has both arrays, as here).
func Build(ops []*sidetree.Operation, addr AddressFunc, l Limits) (*Files, error) {
	l = l.withDefaults()
	if len(ops) == 0 {
		return nil, ErrNoOperations
	}
	var c compressor
	if len(ops) > l.MaxOperations {
		countErr := &CapacityError{Kind: Count, Size: len(ops), Limit: l.MaxOperations, Fit: l.MaxOperations}
		// The first MaxOperations may still overflow a file; Fit must be a count that builds.
		_, err := build(ops[:l.MaxOperations], addr, l, &c)
		var capErr *CapacityError
		if errors.As(err, &capErr) {
			countErr.Fit = fit(ops[:l.MaxOperations], addr, l, &c, capErr)
		}
		return nil, countErr
	}
	files, err := build(ops, addr, l, &c)
	var capErr *CapacityError
	if errors.As(err, &capErr) {
		capErr.Fit = fit(ops, addr, l, &c, capErr)
	}
	return files, err
}

// fit shrinks the batch in proportion to the overflow (compressed size is close to linear in
// the operation count) until a prefix builds.
func fit(ops []*sidetree.Operation, addr AddressFunc, l Limits, c *compressor, first *CapacityError) int {
	n, size, limit := len(ops), first.Size, first.Limit
	for n > 0 {
		n = min(n-1, int(float64(n)*float64(limit)/float64(size)*0.98))
		if n <= 0 {
			return 0
		}
		_, err := build(ops[:n], addr, l, c)
		var capErr *CapacityError
		if !errors.As(err, &capErr) {
			return n
		}
		size, limit = capErr.Size, capErr.Limit
	}
	return 0
}

type partition struct {
	creates, recovers, deactivates, updates []*sidetree.Operation
}

func split(ops []*sidetree.Operation) (partition, error) {
	var p partition
	seen := make(map[string]int, len(ops))
	for i, op := range ops {
		if op == nil {
			return p, fmt.Errorf("batchfile: operation %d is nil", i)
		}
		if first, dup := seen[op.Suffix]; dup {
			return p, &DuplicateSuffixError{Suffix: op.Suffix, First: first, Second: i}
		}
		seen[op.Suffix] = i
		switch op.Type {
		case sidetree.OperationCreate:
			p.creates = append(p.creates, op)
		case sidetree.OperationRecover:
			p.recovers = append(p.recovers, op)
		case sidetree.OperationDeactivate:
			p.deactivates = append(p.deactivates, op)
		case sidetree.OperationUpdate:
			p.updates = append(p.updates, op)
		default:
			return p, fmt.Errorf("batchfile: operation %d has type %q", i, op.Type)
		}
		if op.Type != sidetree.OperationDeactivate && op.Delta == nil {
			return p, fmt.Errorf("batchfile: %s operation %d has no delta", op.Type, i)
		}
	}
	return p, nil
}

func build(ops []*sidetree.Operation, addr AddressFunc, l Limits, c *compressor) (*Files, error) {
	p, err := split(ops)
	if err != nil {
		return nil, err
	}
	files := &Files{}
	// Each file is written in the order of the reference implementation's BatchWriter, since
	// each needs the URI of the ones before.
	if len(p.recovers)+len(p.deactivates) > 0 {
		if files.CoreProof, err = finish(CoreProof, coreProofJSON(p, l.OrbProofs), addr, l, c); err != nil {
			return nil, err
		}
	}
	if len(p.updates) > 0 {
		if files.ProvisionalProof, err = finish(ProvisionalProof, provisionalProofJSON(p, l.OrbProofs), addr, l, c); err != nil {
			return nil, err
		}
	}
	if len(p.creates)+len(p.recovers)+len(p.updates) > 0 {
		if files.Chunk, err = finish(Chunk, chunkJSON(p), addr, l, c); err != nil {
			return nil, err
		}
		if files.ProvisionalIndex, err = finish(ProvisionalIndex, provisionalIndexJSON(p, files), addr, l, c); err != nil {
			return nil, err
		}
	}
	if files.CoreIndex, err = finish(CoreIndex, coreIndexJSON(p, files), addr, l, c); err != nil {
		return nil, err
	}
	files.Anchor = Anchor{Count: len(ops), CoreIndexURI: files.CoreIndex.URI}
	files.Operations = make([]sidetree.AnchoredOperation, 0, len(ops))
	for _, group := range [][]*sidetree.Operation{p.creates, p.recovers, p.deactivates, p.updates} {
		for _, op := range group {
			files.Operations = append(files.Operations, sidetree.AnchoredOperation{
				Position: len(files.Operations), Type: op.Type, Suffix: op.Suffix, Request: op.Request, Parsed: op,
			})
		}
	}
	return files, nil
}

func finish(k Kind, json []byte, addr AddressFunc, l Limits, c *compressor) (*File, error) {
	data := c.compress(json)
	if limit := l.maxSize(k); len(data) > limit {
		return nil, &CapacityError{Kind: k, Size: len(data), Limit: limit}
	}
	uri := addr(data)
	ref := uri
	if l.ReferenceFunc != nil {
		ref = l.ReferenceFunc(uri, data)
	}
	// The reference is what a reader meets and checks (the core index's too: it is the form the
	// anchor names it by).
	if err := checkURI(ref, l); err != nil {
		return nil, fmt.Errorf("batchfile: address of %s: %w", k, err)
	}
	return &File{Kind: k, URI: uri, Ref: ref, Data: data}, nil
}

// {"operations":{"recover":[{"signedData":…}],"deactivate":[…]}}, or Orb's
// {"operations":{"recover":["…"]}} (strings, empty arrays left out).
func coreProofJSON(p partition, orb bool) []byte {
	b := make([]byte, 0, 64+(len(p.recovers)+len(p.deactivates))*(400))
	b = append(b, `{"operations":{`...)
	sep := false
	for _, group := range []struct {
		name string
		ops  []*sidetree.Operation
	}{{"recover", p.recovers}, {"deactivate", p.deactivates}} {
		if orb && len(group.ops) == 0 {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, group.name...)
		b = append(b, `":`...)
		b = appendProofs(b, group.ops, orb)
		sep = true
	}
	return append(b, "}}"...)
}

// {"operations":{"update":[{"signedData":…}]}}, or Orb's {"operations":{"update":["…"]}}.
func provisionalProofJSON(p partition, orb bool) []byte {
	b := make([]byte, 0, 64+len(p.updates)*400)
	b = append(b, `{"operations":{"update":`...)
	b = appendProofs(b, p.updates, orb)
	return append(b, "}}"...)
}

func appendProofs(b []byte, ops []*sidetree.Operation, orb bool) []byte {
	b = append(b, '[')
	for i, op := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		if orb {
			b = jsontree.AppendQuoted(b, op.SignedData)
			continue
		}
		b = append(b, `{"signedData":`...)
		b = jsontree.AppendQuoted(b, op.SignedData)
		b = append(b, '}')
	}
	return append(b, ']')
}

// {"deltas":[creates…, recovers…, updates…]}
func chunkJSON(p partition) []byte {
	n := 16
	for _, group := range [][]*sidetree.Operation{p.creates, p.recovers, p.updates} {
		for _, op := range group {
			n += len(op.Delta.JSON()) + 1
		}
	}
	b := make([]byte, 0, n)
	b = append(b, `{"deltas":[`...)
	first := true
	for _, group := range [][]*sidetree.Operation{p.creates, p.recovers, p.updates} {
		for _, op := range group {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, op.Delta.JSON()...)
		}
	}
	return append(b, "]}"...)
}

// {"chunks":[{"chunkFileUri":…}],"operations":{"update":[…]},"provisionalProofFileUri":…}
func provisionalIndexJSON(p partition, f *Files) []byte {
	b := make([]byte, 0, 128+len(p.updates)*110)
	b = append(b, `{"chunks":[{"chunkFileUri":`...)
	b = jsontree.AppendQuoted(b, f.Chunk.Ref)
	b = append(b, "}]"...)
	if len(p.updates) > 0 {
		b = append(b, `,"operations":{"update":`...)
		b = appendReferences(b, p.updates)
		b = append(b, `},"provisionalProofFileUri":`...)
		b = jsontree.AppendQuoted(b, f.ProvisionalProof.Ref)
	}
	return append(b, '}')
}

// {"provisionalIndexFileUri":…,"operations":{"create":[…],"recover":[…],"deactivate":[…]},
// "coreProofFileUri":…}; no writerLockId (anchord uses no value time lock).
func coreIndexJSON(p partition, f *Files) []byte {
	b := make([]byte, 0, 256+len(p.creates)*150+(len(p.recovers)+len(p.deactivates))*110)
	b = append(b, '{')
	sep := false
	if f.ProvisionalIndex != nil {
		b = append(b, `"provisionalIndexFileUri":`...)
		b = jsontree.AppendQuoted(b, f.ProvisionalIndex.Ref)
		sep = true
	}
	if len(p.creates)+len(p.recovers)+len(p.deactivates) > 0 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"operations":{`...)
		inner := false
		if len(p.creates) > 0 {
			b = append(b, `"create":[`...)
			for i, op := range p.creates {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"suffixData":`...)
				b = append(b, op.SuffixData.JSON()...)
				b = append(b, '}')
			}
			b = append(b, ']')
			inner = true
		}
		for _, group := range []struct {
			name string
			ops  []*sidetree.Operation
		}{{"recover", p.recovers}, {"deactivate", p.deactivates}} {
			if len(group.ops) == 0 {
				continue
			}
			if inner {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, group.name...)
			b = append(b, `":`...)
			b = appendReferences(b, group.ops)
			inner = true
		}
		b = append(b, '}')
		sep = true
	}
	if f.CoreProof != nil {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"coreProofFileUri":`...)
		b = jsontree.AppendQuoted(b, f.CoreProof.Ref)
	}
	return append(b, '}')
}

// appendReferences writes [{"didSuffix":…,"revealValue":…},…].
func appendReferences(b []byte, ops []*sidetree.Operation) []byte {
	b = append(b, '[')
	for i, op := range ops {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"didSuffix":`...)
		b = jsontree.AppendQuoted(b, op.Suffix)
		b = append(b, `,"revealValue":`...)
		b = jsontree.AppendQuoted(b, op.RevealValue)
		b = append(b, '}')
	}
	return append(b, ']')
}
