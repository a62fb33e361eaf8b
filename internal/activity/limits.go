package activity

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/anchord/anchord/internal/sidetree/jsontree"
)

// Bounds on what the readers accept. The zero Limits means these defaults.
const (
	// MaxActivityBytesDefault bounds one activity or actor document. An Offer or Create with its
	// three data URIs is a few kilobytes; an Announce of many anchor events is the large case.
	MaxActivityBytesDefault = 2 << 20
	// MaxCollectionBytesDefault bounds one collection page (Orb serves 50 activities a page).
	MaxCollectionBytesDefault = 16 << 20
	// MaxLinksetBytesDefault bounds a linkset text, including the decoded content of a data URI
	// (an "original" lists one item per operation of the batch).
	MaxLinksetBytesDefault = 8 << 20
	// MaxDepthDefault bounds JSON nesting. The deepest real shape (Announce → collection →
	// anchor event → linkset → link → reference) is about ten levels.
	MaxDepthDefault = 32
	// MaxItemsDefault bounds the elements of one array and the members of one object in an
	// activity, actor or collection.
	MaxItemsDefault = 1000
	// MaxLinksetItemsDefault bounds the same in a linkset, whose item array has one entry per
	// operation of a batch (Sidetree batches reach 10,000 operations).
	MaxLinksetItemsDefault = 10000
	// MaxIRILength bounds one IRI. A hashlink with CAS and IPFS links in its metadata is a few
	// hundred bytes.
	MaxIRILength = 4096
)

// ErrInvalid is wrapped by every error this package returns for bad input.
var ErrInvalid = errors.New("invalid activity data")

// ErrTooLarge is wrapped, besides ErrInvalid, when input exceeds a bound.
var ErrTooLarge = errors.New("too large")

// Limits bounds a JSON text. Zero fields take the defaults of what is being read.
type Limits struct {
	MaxBytes int
	MaxDepth int
	MaxItems int
}

func (l Limits) withDefaults(maxBytes, maxItems int) Limits {
	return Limits{
		MaxBytes: cmp.Or(l.MaxBytes, maxBytes),
		MaxDepth: cmp.Or(l.MaxDepth, MaxDepthDefault),
		MaxItems: cmp.Or(l.MaxItems, maxItems),
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func tooLarge(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrInvalid, ErrTooLarge, fmt.Sprintf(format, args...))
}

// checkJSON reads data strictly (UTF-8, no duplicate names, one object at the top) within l,
// before encoding/json, which accepts duplicates and bad UTF-8, decodes it.
func checkJSON(data []byte, l Limits) error {
	if len(data) > l.MaxBytes {
		return tooLarge("%d bytes, more than %d", len(data), l.MaxBytes)
	}
	v, err := jsontree.Parse(data)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if v.Kind != jsontree.Object {
		return invalid("top level is %s, want an object", v.TypeName())
	}
	return checkTree(&v, 1, l)
}

func checkTree(v *jsontree.Value, depth int, l Limits) error {
	if depth > l.MaxDepth {
		return tooLarge("nested deeper than %d", l.MaxDepth)
	}
	switch v.Kind {
	case jsontree.Array:
		if len(v.Elems) > l.MaxItems {
			return tooLarge("array of %d elements, more than %d", len(v.Elems), l.MaxItems)
		}
		for i := range v.Elems {
			if err := checkTree(&v.Elems[i], depth+1, l); err != nil {
				return err
			}
		}
	case jsontree.Object:
		if len(v.Members) > l.MaxItems {
			return tooLarge("object of %d members, more than %d", len(v.Members), l.MaxItems)
		}
		// encoding/json matches member names to fields without regard to case, as it did for
		// Orb, so "type" and "Type" in one object would be a duplicate that the later one wins.
		folded := make(map[string]bool, len(v.Members))
		for i := range v.Members {
			key := strings.ToLower(strings.ToUpper(v.Members[i].Name))
			if folded[key] {
				return invalid("member names differing only in case: %q", v.Members[i].Name)
			}
			folded[key] = true
		}
		for i := range v.Members {
			if err := checkTree(&v.Members[i].Value, depth+1, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// canonical returns the JCS form of a JSON text, for hashing.
func canonical(data []byte) ([]byte, error) {
	out, err := jsontree.Canonicalize(data)
	if err != nil {
		return nil, fmt.Errorf("%w: canonicalize: %w", ErrInvalid, err)
	}
	return out, nil
}
