package devledger

import (
	"crypto/sha256"
	"encoding/binary"
)

// fault is what happens to one batch submission.
type fault int

// The faults, in the order of FaultConfig.shares. faultNone is a normal submission.
const (
	faultUnavailable fault = iota
	faultTooManyRequests
	faultBadRequest
	faultTimeout
	faultLost
	faultInvalid
	faultNone
)

// faultKinds names the faults in stats and metrics, indexed by fault.
var faultKinds = [...]string{"unavailable", "too_many_requests", "bad_request", "timeout", "lost", "invalid"}

func (f fault) String() string {
	if f >= 0 && int(f) < len(faultKinds) {
		return faultKinds[f]
	}
	return "none"
}

// faultPicker chooses faults deterministically from a seed.
type faultPicker struct {
	seed   uint64
	shares []float64
}

func newFaultPicker(cfg FaultConfig) faultPicker {
	return faultPicker{seed: cfg.Seed, shares: cfg.shares()}
}

// pick returns the fault for the attempt-th submission (0-based) of the BatchList identified by
// key. It hashes seed, key and attempt into a number u uniform in [0, 1) and returns the first
// fault whose cumulative share exceeds u.
func (p faultPicker) pick(key string, attempt int) fault {
	h := sha256.New()
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], p.seed)
	h.Write(buf[:])
	binary.BigEndian.PutUint64(buf[:], uint64(attempt))
	h.Write(buf[:])
	h.Write([]byte(key))
	var sum [sha256.Size]byte
	u := float64(binary.BigEndian.Uint64(h.Sum(sum[:0])[:8])>>11) / (1 << 53)
	var acc float64
	for i, s := range p.shares {
		acc += s
		if u < acc {
			return fault(i)
		}
	}
	return faultNone
}
