package batchfile

import (
	"fmt"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// FetchFunc returns the content stored under a CAS URI. maxSize is the largest valid size of
// the file: the function may stop reading after maxSize+1 bytes (a longer result is rejected).
// It is the reader's only way to the outside.
type FetchFunc func(uri string, maxSize int) ([]byte, error)

// FetchError wraps an error of the FetchFunc. Whether to retry is the caller's call: its own
// error says whether the content is missing for good or the store was unreachable.
type FetchError struct {
	Kind Kind
	URI  string
	Err  error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("batchfile: fetch %s %s: %v", e.Kind, e.URI, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// Batch is what Read returns: an anchored batch's operations.
type Batch struct {
	Anchor Anchor
	// Operations in anchor order (AnchoredOperation.Position: creates, recovers, deactivates,
	// updates), Sequence left zero for the caller to set.
	Operations []sidetree.AnchoredOperation
	// ProvisionalErr is non-nil when the provisional index, provisional proof or chunk file
	// could not be used. As in the reference implementation the core operations are still
	// returned, without deltas, and updates are dropped. It is a *FetchError when fetching
	// failed (the caller may want to read the batch again later), else a *sidetree.Error.
	ProvisionalErr error
}

// Read reads the batch an anchor string points to, applying the reader rules of the
// reference implementation's TransactionProcessor. An invalid anchor string, core index file or
// core proof file invalidates the whole batch: the error is a *sidetree.Error (permanent) or a
// *FetchError. Problems with the provisional files are reported in Batch.ProvisionalErr instead.
func Read(p sidetree.Profile, anchorString string, fetch FetchFunc, l Limits) (*Batch, error) {
	l = l.withDefaults()
	anchor, core, err := readCore(anchorString, fetch, l)
	if err != nil {
		return nil, err
	}
	var proofs *coreProofFile
	if core.coreProofURI != "" {
		data, err := fetchFile(fetch, CoreProof, core.coreProofURI, l)
		if err != nil {
			return nil, err
		}
		suffixes := make([]string, len(core.deactivates))
		for i, d := range core.deactivates {
			suffixes[i] = d.suffix
		}
		if proofs, err = parseCoreProofFile(data, p, suffixes); err != nil {
			return nil, err
		}
		// The reference implementation compares only the total; so does this reader.
		if got, want := len(proofs.recovers)+len(proofs.deactivates), len(core.recovers)+len(core.deactivates); got != want {
			return nil, sidetree.Errorf(sidetree.CodeInvalidCoreProofFile, "core proof file has %d proofs for %d recovers and deactivates", got, want)
		}
	}
	r := &Batch{Anchor: anchor}
	prov, deltas, err := readProvisional(p, anchor, core, fetch, l)
	if err != nil {
		r.ProvisionalErr = err
		prov, deltas = nil, nil
	}
	r.Operations = compose(core, proofs, prov, deltas)
	return r, nil
}

// readCore parses the anchor string and reads the core index file it points to.
func readCore(anchorString string, fetch FetchFunc, l Limits) (Anchor, *coreIndexFile, error) {
	anchor, err := ParseAnchorString(anchorString, l)
	if err != nil {
		return anchor, nil, err
	}
	data, err := fetchFile(fetch, CoreIndex, anchor.CoreIndexURI, l)
	if err != nil {
		return anchor, nil, err
	}
	core, err := parseCoreIndexFile(data, l)
	if err != nil {
		return anchor, nil, err
	}
	if core.count() > anchor.Count {
		return anchor, nil, sidetree.Errorf(sidetree.CodeOperationCountExceedsLimit, "core index file has %d operations, the anchor string pays for %d", core.count(), anchor.Count)
	}
	return anchor, core, nil
}

type provisional struct {
	index  *provisionalIndexFile
	proofs []string
}

// readProvisional reads the provisional index, provisional proof and chunk files and checks them
// against each other and the core index file.
func readProvisional(p sidetree.Profile, anchor Anchor, core *coreIndexFile, fetch FetchFunc, l Limits) (*provisional, [][]byte, error) {
	index, err := outlineProvisional(anchor, core, fetch, l)
	if err != nil || index == nil {
		return nil, nil, err
	}
	var data []byte
	prov := &provisional{index: index}
	if index.proofURI != "" {
		if data, err = fetchFile(fetch, ProvisionalProof, index.proofURI, l); err != nil {
			return nil, nil, err
		}
		if prov.proofs, err = parseProvisionalProofFile(data, p); err != nil {
			return nil, nil, err
		}
		if len(prov.proofs) != len(index.updates) {
			return nil, nil, sidetree.Errorf(sidetree.CodeInvalidProvisionalProof, "provisional proof file has %d proofs for %d updates", len(prov.proofs), len(index.updates))
		}
	}
	if data, err = fetchFile(fetch, Chunk, index.chunkURI, l); err != nil {
		return nil, nil, err
	}
	deltas, err := parseChunkFile(data, p)
	if err != nil {
		return nil, nil, err
	}
	if want := len(core.creates) + len(core.recovers) + len(index.updates); len(deltas) != want {
		return nil, nil, sidetree.Errorf(sidetree.CodeInvalidChunkFile, "chunk file has %d deltas for %d operations with deltas", len(deltas), want)
	}
	return prov, deltas, nil
}

// fetchFile fetches, size-checks and decompresses one file.
func fetchFile(fetch FetchFunc, k Kind, uri string, l Limits) ([]byte, error) {
	max := l.maxSize(k)
	data, err := fetch(uri, max)
	if err != nil {
		return nil, &FetchError{Kind: k, URI: uri, Err: err}
	}
	if len(data) > max {
		return nil, sidetree.Errorf(sidetree.CodeFileTooLarge, "%s %s is %d bytes, over the limit of %d", k, uri, len(data), max)
	}
	return decompressFile(k, data, l)
}

// compose rebuilds each operation's request from the files, as the reference implementation's
// composeAnchored*OperationModels do; members whose data is missing are left out.
func compose(core *coreIndexFile, proofs *coreProofFile, prov *provisional, deltas [][]byte) []sidetree.AnchoredOperation {
	n := core.count()
	if prov != nil {
		n += len(prov.index.updates)
	}
	ops := make([]sidetree.AnchoredOperation, 0, n)
	deltaAt := func(i int) []byte {
		if deltas == nil {
			return nil
		}
		return deltas[i]
	}
	proofAt := func(list func(*coreProofFile) []string, i int) string {
		if proofs == nil || i >= len(list(proofs)) {
			return ""
		}
		return list(proofs)[i]
	}
	for i, c := range core.creates {
		b := make([]byte, 0, 48+len(c.suffixData)+len(deltaAt(i)))
		b = append(b, `{"type":"create","suffixData":`...)
		b = append(b, c.suffixData...)
		b = appendDelta(b, deltaAt(i))
		ops = append(ops, sidetree.AnchoredOperation{Position: len(ops), Type: sidetree.OperationCreate, Suffix: c.suffix, Request: append(b, '}')})
	}
	for i, r := range core.recovers {
		jws := proofAt(func(f *coreProofFile) []string { return f.recovers }, i)
		b := appendSigned(sidetree.OperationRecover, r, jws)
		b = appendDelta(b, deltaAt(len(core.creates)+i))
		ops = append(ops, sidetree.AnchoredOperation{Position: len(ops), Type: sidetree.OperationRecover, Suffix: r.suffix, Request: append(b, '}')})
	}
	for i, r := range core.deactivates {
		jws := proofAt(func(f *coreProofFile) []string { return f.deactivates }, i)
		b := appendSigned(sidetree.OperationDeactivate, r, jws)
		ops = append(ops, sidetree.AnchoredOperation{Position: len(ops), Type: sidetree.OperationDeactivate, Suffix: r.suffix, Request: append(b, '}')})
	}
	if prov != nil {
		for i, u := range prov.index.updates {
			b := appendSigned(sidetree.OperationUpdate, u, prov.proofs[i])
			b = appendDelta(b, deltaAt(len(core.creates)+len(core.recovers)+i))
			ops = append(ops, sidetree.AnchoredOperation{Position: len(ops), Type: sidetree.OperationUpdate, Suffix: u.suffix, Request: append(b, '}')})
		}
	}
	return ops
}

// appendSigned writes {"type":…,"didSuffix":…,"revealValue":…[,"signedData":…] without the
// closing brace, in sidetree.Operation.Request's member order.
func appendSigned(typ sidetree.OperationType, r reference, jws string) []byte {
	b := make([]byte, 0, 160+len(jws)+1000)
	b = append(b, `{"type":`...)
	b = jsontree.AppendQuoted(b, string(typ))
	b = append(b, `,"didSuffix":`...)
	b = jsontree.AppendQuoted(b, r.suffix)
	b = append(b, `,"revealValue":`...)
	b = jsontree.AppendQuoted(b, r.reveal)
	if jws != "" {
		b = append(b, `,"signedData":`...)
		b = jsontree.AppendQuoted(b, jws)
	}
	return b
}

func appendDelta(b, delta []byte) []byte {
	if delta == nil {
		return b
	}
	b = append(b, `,"delta":`...)
	return append(b, delta...)
}
