// Package cas addresses content the way IPFS does, so that Sidetree batch files stored by anchord
// carry the CAS URIs an IPFS node would give them.
package cas

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// This file is self-contained: the CID computation needs nothing but the standard library.
//
// ComputeCID reproduces `ipfs add` with default settings (kubo, boxo importer): the file is cut
// into 256 KiB chunks; each chunk becomes a dag-pb node holding a UnixFS File message (no raw
// leaves); a file of one chunk is that node alone, a larger one is the balanced layout with at
// most 174 links per node. The encoder is written out here rather than calling
// github.com/ipfs/boxo because boxo's importer needs a DAG service, block store and some forty
// modules to compute 34 bytes; boxo instead checks this code in cid_test.go (sizes 0 to 10 MB,
// both CID versions).

// CIDVersion selects how ComputeCID names the DAG.
type CIDVersion uint8

const (
	// CIDv0 is base58btc of the sha2-256 multihash ("Qm…"), what `ipfs add` prints by default.
	CIDv0 CIDVersion = 0
	// CIDv1 is multibase base32 ("b…") of version 1, codec dag-pb, sha2-256; the same DAG as v0
	// with every link a CIDv1 too (`ipfs add --cid-version=1 --raw-leaves=false`).
	CIDv1 CIDVersion = 1
)

// UnixFS importer and multiformats constants.
const (
	chunkSize  = 256 * 1024 // kubo's default size-262144 chunker
	maxLinks   = 174        // boxo helpers.DefaultLinksPerBlock
	codecDagPB = 0x70
	codecRaw   = 0x55
	mhSHA256   = 0x12
	digestSize = 32
	// MaxCIDLength bounds the string form accepted by ParseCID; it is Sidetree's
	// MAX_CAS_URI_LENGTH.
	MaxCIDLength = 100
)

// ErrInvalidCID is wrapped by every ParseCID error.
var ErrInvalidCID = errors.New("invalid CID")

// ComputeCID returns the CID `ipfs add` gives data, in version v.
func ComputeCID(data []byte, v CIDVersion) string {
	return CID{Version: v, Codec: codecDagPB, Digest: buildDAG(data, v)}.String()
}

// AddressFunc returns ComputeCID fixed to version v, the shape a batch builder takes.
func AddressFunc(v CIDVersion) func(data []byte) string {
	return func(data []byte) string { return ComputeCID(data, v) }
}

// dagNode is what a parent needs of a child: its CID bytes, the cumulative size of the
// serialised blocks below and including it (the link's Tsize) and the file bytes it covers.
type dagNode struct {
	digest   [digestSize]byte
	tsize    uint64
	fileSize uint64
}

// buildDAG returns the root digest. Leaves are built in file order and grouped bottom-up by 174;
// because every leaf sits at the same depth and nodes fill left to right, this is the tree
// boxo's balanced.Layout grows top-down.
func buildDAG(data []byte, v CIDVersion) [digestSize]byte {
	h := sha256.New()
	if len(data) <= chunkSize {
		return leaf(h, data).digest
	}
	level := make([]dagNode, 0, (len(data)+chunkSize-1)/chunkSize)
	for off := 0; off < len(data); off += chunkSize {
		level = append(level, leaf(h, data[off:min(off+chunkSize, len(data))]))
	}
	var block []byte
	for len(level) > 1 {
		next := make([]dagNode, 0, (len(level)+maxLinks-1)/maxLinks)
		for i := 0; i < len(level); i += maxLinks {
			var n dagNode
			n, block = internal(h, level[i:min(i+maxLinks, len(level))], v, block[:0])
			next = append(next, n)
		}
		level = next
	}
	return level[0].digest
}

// leaf hashes PBNode{Data: UnixFS{Type: File, Data: chunk, filesize: len(chunk)}} without
// copying the chunk. Empty data omits the Data field, as the importer does for an empty file.
func leaf(h hash.Hash, chunk []byte) dagNode {
	n := uint64(len(chunk))
	unixfs := 2 + 1 + uvarintLen(n) // Type, filesize
	if n > 0 {
		unixfs += 1 + uvarintLen(n) + len(chunk)
	}
	var head [32]byte
	b := append(head[:0], 0x0a) // PBNode.Data
	b = binary.AppendUvarint(b, uint64(unixfs))
	b = append(b, 0x08, 0x02) // Data.Type = File
	if n > 0 {
		b = append(b, 0x12) // Data.Data
		b = binary.AppendUvarint(b, n)
	}
	var tail [16]byte
	t := append(tail[:0], 0x18) // Data.filesize
	t = binary.AppendUvarint(t, n)
	h.Reset()
	h.Write(b)
	h.Write(chunk)
	h.Write(t)
	node := dagNode{tsize: uint64(len(b) + len(chunk) + len(t)), fileSize: n}
	h.Sum(node.digest[:0])
	return node
}

// internal builds PBNode{Links: children, Data: UnixFS{Type: File, filesize, blocksizes}} with
// dag-pb's canonical field order (links before data), each link {Hash, Name: "", Tsize}.
func internal(h hash.Hash, children []dagNode, v CIDVersion, block []byte) (dagNode, []byte) {
	var total, below uint64
	for _, c := range children {
		total += c.fileSize
		below += c.tsize
	}
	cidLen := 2 + digestSize
	if v == CIDv1 {
		cidLen += 2
	}
	for _, c := range children {
		linkLen := 1 + uvarintLen(uint64(cidLen)) + cidLen + 2 + 1 + uvarintLen(c.tsize)
		block = append(block, 0x12) // PBNode.Links
		block = binary.AppendUvarint(block, uint64(linkLen))
		block = append(block, 0x0a) // PBLink.Hash
		block = binary.AppendUvarint(block, uint64(cidLen))
		block = appendCIDBytes(block, v, codecDagPB, c.digest)
		block = append(block, 0x12, 0x00, 0x18) // PBLink.Name = "", PBLink.Tsize
		block = binary.AppendUvarint(block, c.tsize)
	}
	unixfs := 2 + 1 + uvarintLen(total)
	for _, c := range children {
		unixfs += 1 + uvarintLen(c.fileSize)
	}
	block = append(block, 0x0a) // PBNode.Data
	block = binary.AppendUvarint(block, uint64(unixfs))
	block = append(block, 0x08, 0x02, 0x18) // Type = File, filesize
	block = binary.AppendUvarint(block, total)
	for _, c := range children {
		block = append(block, 0x20) // blocksizes (repeated, unpacked)
		block = binary.AppendUvarint(block, c.fileSize)
	}
	node := dagNode{tsize: uint64(len(block)) + below, fileSize: total}
	h.Reset()
	h.Write(block)
	h.Sum(node.digest[:0])
	return node, block
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// CID is a parsed content identifier with a sha2-256 multihash.
type CID struct {
	Version CIDVersion
	// Codec is the multicodec of the content: 0x70 dag-pb (always for v0) or 0x55 raw.
	Codec  uint64
	Digest [digestSize]byte
}

// appendCIDBytes appends the binary CID: the bare multihash for v0; version, codec, multihash
// for v1.
func appendCIDBytes(b []byte, v CIDVersion, codec uint64, digest [digestSize]byte) []byte {
	if v == CIDv1 {
		b = binary.AppendUvarint(b, 1)
		b = binary.AppendUvarint(b, codec)
	}
	b = append(b, mhSHA256, digestSize)
	return append(b, digest[:]...)
}

// Bytes returns the binary form of c.
func (c CID) Bytes() []byte { return appendCIDBytes(nil, c.Version, c.Codec, c.Digest) }

var base32Lower = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// String returns "Qm…" for v0 and "b…" (base32, lower case) for v1.
func (c CID) String() string {
	if c.Version == CIDv0 {
		return base58Encode(c.Bytes())
	}
	return "b" + base32Lower.EncodeToString(c.Bytes())
}

// ParseCID validates a CID string of the forms this package produces: CIDv0 ("Qm…", base58btc
// sha2-256) or CIDv1 in lower-case base32 ("b…") with codec dag-pb or raw and a sha2-256
// multihash. The string must be the canonical encoding of its bytes, so one CID has one string.
func ParseCID(s string) (CID, error) {
	switch {
	case len(s) > MaxCIDLength:
		return CID{}, fmt.Errorf("%w: longer than %d characters", ErrInvalidCID, MaxCIDLength)
	case strings.HasPrefix(s, "Qm") && len(s) == 46:
		b, err := base58Decode(s)
		if err != nil || len(b) != 2+digestSize || b[0] != mhSHA256 || b[1] != digestSize {
			return CID{}, fmt.Errorf("%w: %q is not a base58btc sha2-256 multihash", ErrInvalidCID, s)
		}
		c := CID{Version: CIDv0, Codec: codecDagPB}
		copy(c.Digest[:], b[2:])
		return c, nil
	case strings.HasPrefix(s, "b"):
		b, err := base32Lower.DecodeString(s[1:])
		if err != nil {
			return CID{}, fmt.Errorf("%w: %q is not lower-case base32", ErrInvalidCID, s)
		}
		c, err := parseCIDv1Bytes(b)
		if err != nil {
			return CID{}, fmt.Errorf("%w: %q: %w", ErrInvalidCID, s, err)
		}
		if c.String() != s {
			return CID{}, fmt.Errorf("%w: %q is not in canonical form", ErrInvalidCID, s)
		}
		return c, nil
	default:
		return CID{}, fmt.Errorf("%w: %q is neither CIDv0 (Qm…) nor base32 CIDv1 (b…)", ErrInvalidCID, s)
	}
}

func parseCIDv1Bytes(b []byte) (CID, error) {
	version, n := binary.Uvarint(b)
	if n <= 0 || version != 1 {
		return CID{}, errors.New("not CID version 1")
	}
	b = b[n:]
	codec, n := binary.Uvarint(b)
	if n <= 0 || (codec != codecDagPB && codec != codecRaw) {
		return CID{}, errors.New("codec is neither dag-pb nor raw")
	}
	b = b[n:]
	if len(b) != 2+digestSize || b[0] != mhSHA256 || b[1] != digestSize {
		return CID{}, errors.New("multihash is not sha2-256")
	}
	c := CID{Version: CIDv1, Codec: codec}
	copy(c.Digest[:], b[2:])
	return c, nil
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Encode is base58btc (the Bitcoin alphabet), leading zero bytes as '1'.
func base58Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	// log(256)/log(58) < 1.37
	digits := make([]byte, 0, len(b)*137/100+1)
	for _, c := range b[zeros:] {
		carry := int(c)
		for i := range digits {
			carry += int(digits[i]) << 8
			digits[i] = byte(carry % 58)
			carry /= 58
		}
		for carry > 0 {
			digits = append(digits, byte(carry%58))
			carry /= 58
		}
	}
	out := make([]byte, zeros+len(digits))
	for i := range zeros {
		out[i] = '1'
	}
	for i, d := range digits {
		out[len(out)-1-i] = base58Alphabet[d]
	}
	return string(out)
}

func base58Decode(s string) ([]byte, error) {
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	bytes := make([]byte, 0, len(s))
	for i := zeros; i < len(s); i++ {
		carry := strings.IndexByte(base58Alphabet, s[i])
		if carry < 0 {
			return nil, errors.New("invalid base58 character")
		}
		for j := range bytes {
			carry += int(bytes[j]) * 58
			bytes[j] = byte(carry)
			carry >>= 8
		}
		for carry > 0 {
			bytes = append(bytes, byte(carry))
			carry >>= 8
		}
	}
	out := make([]byte, zeros+len(bytes))
	for i, c := range bytes {
		out[len(out)-1-i] = c
	}
	return out, nil
}
