package batchfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/anchord/anchord/internal/sidetree"
)

// compressionLevel is level 2 of klauspost/compress's gzip writer; doc.go has the measurement
// behind the choice.
const compressionLevel = 2

// compressor gzips one file after another with one gzip.Writer (about 1.2 MiB of state, so a
// Build allocates it once, not once per file). The package keeps no writer pool: no package
// state.
type compressor struct {
	w *kgzip.Writer
}

// compress gzips data. Go writes OS byte 255 where Node writes 3 and its deflate stream differs
// from zlib's, so CAS URIs of equal JSON differ between implementations; readers compare JSON.
func (c *compressor) compress(data []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(data)/3 + 64)
	if c.w == nil {
		c.w, _ = kgzip.NewWriterLevel(&buf, compressionLevel) // the level is valid
	} else {
		c.w.Reset(&buf)
	}
	// Writes to a bytes.Buffer cannot fail.
	_, _ = c.w.Write(data)
	_ = c.w.Close()
	return buf.Bytes()
}

var errTooLarge = errors.New("decompressed size exceeds the limit")

// decompress gunzips data, aborting as soon as the output exceeds max bytes, so a small
// "zip bomb" costs at most max bytes of memory. It reads with the standard library, not the
// library that writes: klauspost/compress refuses a header with reserved flag bits set, which
// compress/gzip ignores, and a batch file this accepted once must not be refused after an
// upgrade (the DIDs it holds would resolve differently). Reading is not faster there anyway.
func decompress(data []byte, max int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	// The gzip trailer's ISIZE (length mod 2^32) sizes the buffer; it is untrusted, so it is
	// capped by max and only a hint.
	var buf bytes.Buffer
	if n := len(data); n >= 4 {
		hint := int(uint32(data[n-4]) | uint32(data[n-3])<<8 | uint32(data[n-2])<<16 | uint32(data[n-1])<<24)
		buf.Grow(min(hint, max) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, int64(max)+1)); err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out := buf.Bytes()
	if len(out) > max {
		return nil, fmt.Errorf("gunzip: %w (%d bytes)", errTooLarge, max)
	}
	return out, nil
}

// decompressFile applies decompress with the file kind's bound and maps failures to codes.
func decompressFile(k Kind, data []byte, l Limits) ([]byte, error) {
	max := l.maxSize(k) * l.DecompressionFactor
	out, err := decompress(data, max)
	if err != nil {
		return nil, sidetree.Wrap(sidetree.CodeDecompressionFailed, err, "%s", k)
	}
	return out, nil
}
