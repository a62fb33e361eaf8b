package witnesslog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"

	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

// CheckpointMaxSize bounds a checkpoint read from a peer. A checkpoint is three short lines and
// a few signatures; a witnessed one carries a cosignature per witness.
const CheckpointMaxSize = 64 << 10

// Checkpoint is a log's signed commitment to its first Size entries, opened and verified.
type Checkpoint struct {
	Origin string
	Size   uint64
	// Hash is the RFC 6962 root hash of the tree of Size entries.
	Hash []byte
	// Raw is the signed note exactly as the log served it: the evidence to keep.
	Raw []byte
	// Quorum is false when the checkpoint was read by a Peer with a Quorum it does not
	// satisfy: signed by the log, but not cosigned as the policy requires.
	Quorum bool
}

// OpenCheckpoint verifies that raw is a checkpoint of the log named origin signed by pub, and
// parses it.
func OpenCheckpoint(raw []byte, origin string, pub ed25519.PublicKey) (Checkpoint, error) {
	v, err := newVerifier(origin, pub)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("open checkpoint: %w", err)
	}
	return openCheckpoint(raw, origin, v)
}

func openCheckpoint(raw []byte, origin string, v note.Verifier) (Checkpoint, error) {
	if len(raw) > CheckpointMaxSize {
		return Checkpoint{}, fmt.Errorf("open checkpoint of %s: %d bytes, more than %d", origin, len(raw), CheckpointMaxSize)
	}
	cp, _, _, err := flog.ParseCheckpoint(raw, origin, v)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("open checkpoint of %s: %w", origin, err)
	}
	if len(cp.Hash) != sha256.Size {
		return Checkpoint{}, fmt.Errorf("open checkpoint of %s: the root hash has %d bytes, not %d", origin, len(cp.Hash), sha256.Size)
	}
	// The tree of no entries has one root; a signed checkpoint claiming another is bogus.
	if cp.Size == 0 && !bytes.Equal(cp.Hash, rfc6962.DefaultHasher.EmptyRoot()) {
		return Checkpoint{}, fmt.Errorf("open checkpoint of %s: size 0 with a root hash that is not the empty tree's", origin)
	}
	return Checkpoint{Origin: cp.Origin, Size: cp.Size, Hash: cp.Hash, Raw: raw, Quorum: true}, nil
}

// checkpointSize reads the tree size of a checkpoint without verifying it: for the log's own
// checkpoints, which it signed.
func checkpointSize(raw []byte) (uint64, error) {
	var cp flog.Checkpoint
	if _, err := cp.Unmarshal(raw); err != nil {
		return 0, fmt.Errorf("checkpoint size: %w", err)
	}
	return cp.Size, nil
}
