package vc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/piprate/json-gold/ld"
)

// ErrUndefinedTerm is wrapped when a document uses a term its contexts do not define, or a
// value that does not map to valid RDF. Such data is not covered by a Linked Data proof, and
// Orb refuses the document, so this package neither signs nor verifies it.
var ErrUndefinedTerm = errors.New("document uses terms its contexts do not define")

// Bounds on the RDF a document may produce before it is canonicalized.
const (
	maxQuads      = 1024
	maxBlankNodes = 4
)

// ErrTooComplex is wrapped when a document's RDF exceeds the bounds canonicalization accepts.
var ErrTooComplex = errors.New("document too complex to canonicalize")

// canonicalize returns the URDNA2015 canonical N-Quads of doc, as Orb computes them, plus two
// refusals Orb applies when it signs or parses strictly: a property that expands to nothing
// (json-gold's safe mode) and an output line that is not a valid N-Quad both fail with
// ErrUndefinedTerm. ld.JsonLdProcessor.Normalize drops the safe-mode option on its way to RDF,
// so the two steps it takes are taken here, with the options it would use.
func canonicalize(doc map[string]any) ([]byte, error) {
	toRDF := ld.NewJsonLdOptions("")
	toRDF.ProcessingMode = ld.JsonLd_1_1
	toRDF.DocumentLoader = Loader{}
	toRDF.Format = ""
	toRDF.SafeMode = true
	dataset, err := ld.NewJsonLdProcessor().ToRDF(doc, toRDF)
	if err != nil {
		var ldErr *ld.JsonLdError
		if errors.As(err, &ldErr) && ldErr.Code == ld.InvalidProperty {
			return nil, fmt.Errorf("canonicalize: %w: %w", ErrUndefinedTerm, err)
		}
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	rdf, ok := dataset.(*ld.RDFDataset)
	if !ok {
		return nil, fmt.Errorf("canonicalize: unexpected RDF result %T", dataset)
	}
	if err := checkDatasetSize(rdf); err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}

	norm := ld.NewJsonLdOptions("")
	norm.ProcessingMode = ld.JsonLd_1_1
	norm.Algorithm = ld.AlgorithmURDNA2015
	norm.Format = "application/n-quads"
	norm.DocumentLoader = Loader{}
	out, err := ld.NewJsonLdApi().Normalize(rdf, norm)
	if err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	nquads, ok := out.(string)
	if !ok {
		return nil, fmt.Errorf("canonicalize: unexpected normalize result %T", out)
	}
	for line := range strings.SplitSeq(nquads, "\n") {
		if line == "" {
			continue
		}
		if _, err := ld.ParseNQuads(line + "\n"); err != nil {
			return nil, fmt.Errorf("canonicalize: %w: %q: %w", ErrUndefinedTerm, line, err)
		}
	}
	return []byte(nquads), nil
}

// checkDatasetSize bounds the work URDNA2015 may do. Its cost grows with the factorial of the
// number of blank nodes it cannot tell apart: on this machine a document whose blank nodes all
// link to each other took 1.4 ms with 4 of them, 33 ms with 5, 3 s with 7 and 12.5 s with 8.
// An anchor credential has one blank node and proof options none, so the limit is 4.
func checkDatasetSize(rdf *ld.RDFDataset) error {
	quads := 0
	blank := make(map[string]struct{})
	for _, graph := range rdf.Graphs {
		quads += len(graph)
		for _, q := range graph {
			for _, n := range []ld.Node{q.Subject, q.Object, q.Graph} {
				if n != nil && ld.IsBlankNode(n) {
					blank[n.GetValue()] = struct{}{}
				}
			}
		}
	}
	if quads > maxQuads {
		return fmt.Errorf("%w: %d statements exceeds %d", ErrTooComplex, quads, maxQuads)
	}
	if len(blank) > maxBlankNodes {
		return fmt.Errorf("%w: %d blank nodes exceeds %d", ErrTooComplex, len(blank), maxBlankNodes)
	}
	return nil
}

// checkCompaction fails when compacting doc against its own @context changes its shape, which
// is how Orb decides that a credential uses terms its contexts do not define. A compaction that
// only renames or unwraps values (one-element arrays, {"id": x} objects) is accepted, as Orb
// accepts it.
func checkCompaction(doc map[string]any) error {
	opts := ld.NewJsonLdOptions("")
	opts.ProcessingMode = ld.JsonLd_1_1
	opts.DocumentLoader = Loader{}

	compacted, err := ld.NewJsonLdProcessor().Compact(doc, map[string]any{"@context": doc["@context"]}, opts)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if !sameShape(stripContext(doc), stripContext(compacted)) {
		return fmt.Errorf("compact: %w: the document changes under compaction", ErrUndefinedTerm)
	}
	return nil
}

// sameShape compares two JSON objects after unwrapping single-element arrays and {"id": x}
// objects. Nested objects whose key disappears are not compared: compaction may rename a key
// to a term it cannot predict.
func sameShape(a, b map[string]any) bool {
	a, b = normalizeShape(a).(map[string]any), normalizeShape(b).(map[string]any)
	if reflect.DeepEqual(a, b) {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		am, ok := av.(map[string]any)
		if !ok {
			continue
		}
		bv, ok := b[k]
		if !ok {
			continue
		}
		bm, ok := bv.(map[string]any)
		if !ok || !sameShape(am, bm) {
			return false
		}
	}
	return true
}

func stripContext(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "@context" {
			out[k] = v
		}
	}
	return out
}

// normalizeShape unwraps values the way compaction does, recursively, dropping nested @context.
func normalizeShape(v any) any {
	switch t := v.(type) {
	case []any:
		if len(t) == 1 {
			return normalizeShape(t[0])
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalizeShape(e)
		}
		return out
	case map[string]any:
		if id, ok := t["id"]; ok && len(t) == 1 {
			return normalizeShape(id)
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			if k != "@context" {
				out[k] = normalizeShape(e)
			}
		}
		return out
	default:
		return v
	}
}

// processable returns a deep copy of a decoded JSON value in the form json-gold and Orb see:
// numbers as float64, as encoding/json decodes them without UseNumber.
func processable(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			c, err := processable(e)
			if err != nil {
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			c, err := processable(e)
			if err != nil {
				return nil, err
			}
			s[i] = c
		}
		return s, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s out of range", t)
		}
		return f, nil
	default:
		return v, nil
	}
}
