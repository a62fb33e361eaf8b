package cosigner

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// MaxProofLines is the most consistency proof lines an add-checkpoint request may carry.
const MaxProofLines = 63

// AddCheckpointRequest is the body of a tlog-witness add-checkpoint call.
type AddCheckpointRequest struct {
	// OldSize is the size of the checkpoint the client believes the witness cosigned last.
	OldSize uint64
	// Proof is the consistency proof from OldSize to the checkpoint's size.
	Proof [][]byte
	// Checkpoint is the signed note, signatures included.
	Checkpoint []byte
}

var errMalformed = errors.New("malformed add-checkpoint request")

// ParseAddCheckpoint parses an add-checkpoint body: an "old <size>" line, at most 63 base64
// hashes, an empty line and a checkpoint. Every line ends in a newline; sizes are decimal
// without leading zeroes.
func ParseAddCheckpoint(body []byte) (AddCheckpointRequest, error) {
	var req AddCheckpointRequest
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	if !ok {
		return req, fmt.Errorf("%w: no old size line", errMalformed)
	}
	size, ok := bytes.CutPrefix(line, []byte("old "))
	if !ok {
		return req, fmt.Errorf("%w: the first line is not \"old <size>\"", errMalformed)
	}
	n, err := parseSize(size)
	if err != nil {
		return req, fmt.Errorf("%w: old size: %w", errMalformed, err)
	}
	req.OldSize = n
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return req, fmt.Errorf("%w: no empty line before the checkpoint", errMalformed)
		}
		if len(line) == 0 {
			break
		}
		if len(req.Proof) == MaxProofLines {
			return req, fmt.Errorf("%w: more than %d proof lines", errMalformed, MaxProofLines)
		}
		h, err := base64.StdEncoding.Strict().DecodeString(string(line))
		if err != nil || len(h) != sha256.Size {
			return req, fmt.Errorf("%w: proof line %d is not a base64 hash", errMalformed, len(req.Proof)+1)
		}
		req.Proof = append(req.Proof, h)
	}
	if len(rest) == 0 {
		return req, fmt.Errorf("%w: no checkpoint", errMalformed)
	}
	req.Checkpoint = rest
	return req, nil
}

// parseSize parses a tree size: ASCII decimal, no sign, no leading zero except "0" itself.
func parseSize(b []byte) (uint64, error) {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return 0, fmt.Errorf("%q is not a decimal size", b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a decimal size", b)
		}
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", b, err)
	}
	return n, nil
}
