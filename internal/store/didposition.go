package store

import (
	"encoding/binary"
	"errors"
)

// AppendPositions encodes positions, in anchor order, as the difference of each anchor's
// sequence number from the previous one's and the index, both as unsigned varints: a DID with
// one operation takes four to six bytes.
func AppendPositions(b []byte, positions []DIDPosition) []byte {
	var last int64
	for _, p := range positions {
		b = binary.AppendUvarint(b, uint64(p.AnchorSeq-last))
		b = binary.AppendUvarint(b, uint64(p.Index))
		last = p.AnchorSeq
	}
	return b
}

// ErrPositions is stored positions that do not decode.
var ErrPositions = errors.New("positions do not decode")

// DecodePositions is the inverse of AppendPositions.
func DecodePositions(b []byte) ([]DIDPosition, error) {
	var out []DIDPosition
	var last int64
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, ErrPositions
		}
		b = b[n:]
		i, n := binary.Uvarint(b)
		if n <= 0 || i > 1<<31 {
			return nil, ErrPositions
		}
		b = b[n:]
		last += int64(d)
		out = append(out, DIDPosition{AnchorSeq: last, Index: int(i)})
	}
	return out, nil
}
