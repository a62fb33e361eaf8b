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

// LastAnchors returns each DID's latest anchor, from the positions its state names (in anchor
// order, as DecodePositions returns them): DIDLastAnchors for a backend that reads positions.
func LastAnchors(positions map[string][]DIDPosition) map[string]int64 {
	out := make(map[string]int64, len(positions))
	for s, pos := range positions {
		if len(pos) > 0 {
			out[s] = pos[len(pos)-1].AnchorSeq
		}
	}
	return out
}

// AnchorsBefore returns each DID's latest anchor before beforeSeq, from the positions its state
// names (in anchor order); a DID anchored only at or after beforeSeq has none.
func AnchorsBefore(positions map[string][]DIDPosition, beforeSeq int64) map[string]int64 {
	out := make(map[string]int64, len(positions))
	for s, pos := range positions {
		for i := len(pos) - 1; i >= 0; i-- {
			if pos[i].AnchorSeq < beforeSeq {
				out[s] = pos[i].AnchorSeq
				break
			}
		}
	}
	return out
}

// AnchorRefs joins DIDs' anchors with the hashlinks read for them: DIDLatestAnchors for a
// backend that reads positions. An anchor without a row in hashlinks leaves its DID out, as a
// join of the anchors table would.
func AnchorRefs(anchors map[string]int64, hashlinks map[int64]string) map[string]AnchorRef {
	out := make(map[string]AnchorRef, len(anchors))
	for s, seq := range anchors {
		if h, ok := hashlinks[seq]; ok {
			out[s] = AnchorRef{Seq: seq, Hashlink: h}
		}
	}
	return out
}
