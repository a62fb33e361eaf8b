package witnesslog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/transparency-dev/tessera"
)

// ErrNotCosigned: a checkpoint verified with the log's key, but its cosignatures do not
// satisfy the witness policy a monitor requires.
var ErrNotCosigned = errors.New("witnesslog: the checkpoint lacks the witnesses' quorum")

// Quorum is a witness policy a checkpoint's cosignatures must satisfy; a tessera.WitnessGroup
// is one.
type Quorum interface {
	Satisfied(checkpoint []byte) bool
}

// Witnesses is a witness policy as a monitor uses it: the quorum a checkpoint must satisfy,
// and the witnesses' prefixes, where each serves the latest checkpoint it cosigned per log.
type Witnesses struct {
	Quorum Quorum
	// Prefixes are the witnesses' URL prefixes, sorted (the policy's URLs).
	Prefixes []string
}

// ParseWitnesses reads a witness policy in tessera's format (witness <name> <vkey> <url>,
// group, quorum).
func ParseWitnesses(policy []byte) (Witnesses, error) {
	g, err := tessera.NewWitnessGroupFromPolicy(policy)
	if err != nil {
		return Witnesses{}, fmt.Errorf("witness policy: %w", err)
	}
	w := Witnesses{Quorum: g}
	for u := range g.Endpoints() {
		w.Prefixes = append(w.Prefixes, strings.TrimSuffix(u, "/add-checkpoint"))
	}
	slices.Sort(w.Prefixes)
	return w, nil
}

// WitnessCheckpointPath is where a witness serves the latest checkpoint it cosigned for the
// log named origin, below its prefix (c2sp.org/tlog-witness, "Monitor Retrieval Mechanism").
func WitnessCheckpointPath(origin string) string {
	h := sha256.Sum256([]byte(origin))
	return hex.EncodeToString(h[:]) + "/checkpoint"
}

// WitnessView fetches, through fetch (rooted at a witness's prefix), the latest checkpoint the
// witness cosigned for the peer's log, verified with the log's key. ok is false when the witness
// serves none (it never cosigned this log, or does not implement the retrieval).
func (p *Peer) WitnessView(ctx context.Context, fetch FetchFunc) (cp Checkpoint, ok bool, err error) {
	raw, err := fetch(ctx, WitnessCheckpointPath(p.origin), CheckpointMaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("witness view of %s: %w", p.origin, err)
	}
	cp, err = p.Open(raw)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("witness view of %s: %w", p.origin, err)
	}
	return cp, true, nil
}
