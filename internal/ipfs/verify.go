package ipfs

import (
	"fmt"

	"github.com/anchord/anchord/internal/cas"
)

// codecDagPB is the multicodec of the DAGs cas builds; a raw-codec CID (a file added with raw
// leaves and fitting in one block) is a DAG cas does not compute.
const codecDagPB = 0x70

// Verify reports whether data is the file cid names, by recomputing the CID with cas: nil if
// it is, an error wrapping ErrMismatch if not, ErrUnverifiable for a CID of a shape cas does
// not build, cas.ErrInvalidCID for a malformed one.
func Verify(cid string, data []byte) error {
	parsed, err := cas.ParseCID(cid)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if parsed.Codec != codecDagPB {
		return fmt.Errorf("verify %s: codec 0x%x is not dag-pb: %w", cid, parsed.Codec, ErrUnverifiable)
	}
	if got := cas.ComputeCID(data, parsed.Version); got != parsed.String() {
		return fmt.Errorf("verify %s: %d bytes hash to %s: %w", cid, len(data), got, ErrMismatch)
	}
	return nil
}
