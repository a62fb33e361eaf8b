package activity

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"io"
	"net/url"
	"strings"
)

// Data URI media types Orb writes and reads, exactly (Orb matches the whole string).
const (
	// MediaTypeGzipBase64 is gzip, then standard base64: Orb's default for linkset references.
	MediaTypeGzipBase64 = "application/gzip;base64"
	// MediaTypeJSON is the JSON text query-escaped (Go's url.QueryEscape, so spaces are '+').
	MediaTypeJSON = "application/json"
)

// MaxDataURIBytesDefault bounds the decoded content of a data URI when DecodeDataURI is given 0.
const MaxDataURIBytesDefault = MaxLinksetBytesDefault

const dataScheme = "data:"

// NewDataURI encodes content as a data URI of the given media type.
func NewDataURI(content []byte, mediaType string) (string, error) {
	switch mediaType {
	case MediaTypeGzipBase64:
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		// Writes to a bytes.Buffer cannot fail.
		_, _ = zw.Write(content)
		_ = zw.Close()
		return dataScheme + mediaType + "," + base64.StdEncoding.EncodeToString(buf.Bytes()), nil
	case MediaTypeJSON:
		return dataScheme + mediaType + "," + url.QueryEscape(string(content)), nil
	default:
		return "", invalid("data URI media type %q not supported", mediaType)
	}
}

// DecodeDataURI returns the content of a data URI, at most maxBytes of it (0:
// MaxDataURIBytesDefault); larger content, compressed or not, is ErrTooLarge.
func DecodeDataURI(uri string, maxBytes int) ([]byte, error) {
	maxBytes = cmp.Or(maxBytes, MaxDataURIBytesDefault)
	rest, ok := strings.CutPrefix(uri, dataScheme)
	if !ok {
		return nil, invalid("not a data URI")
	}
	mediaType, data, ok := strings.Cut(rest, ",")
	if !ok {
		return nil, invalid("no content in data URI")
	}
	switch mediaType {
	case MediaTypeGzipBase64:
		// Deflate falls back to stored blocks (5 bytes per 64 KiB) when it cannot compress, so
		// content within maxBytes never needs much more than maxBytes of gzip; a longer text is
		// refused before it is decoded.
		if len(data) > base64.StdEncoding.EncodedLen(maxBytes+maxBytes/1024+1024) {
			return nil, tooLarge("data URI of %d bytes", len(uri))
		}
		compressed, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, invalid("data URI base64: %v", err)
		}
		return gunzip(compressed, maxBytes)
	case MediaTypeJSON:
		if len(data) > 3*maxBytes {
			return nil, tooLarge("data URI of %d bytes", len(uri))
		}
		content, err := url.QueryUnescape(data)
		if err != nil {
			return nil, invalid("data URI escape: %v", err)
		}
		if len(content) > maxBytes {
			return nil, tooLarge("data URI content of %d bytes, more than %d", len(content), maxBytes)
		}
		return []byte(content), nil
	case "":
		return nil, invalid("data URI media type not specified")
	default:
		return nil, invalid("data URI media type %q not supported", mediaType)
	}
}

func gunzip(compressed []byte, maxBytes int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return nil, invalid("data URI gzip: %v", err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(maxBytes)+1))
	if err != nil {
		return nil, invalid("data URI gzip: %v", err)
	}
	if len(out) > maxBytes {
		return nil, tooLarge("data URI content decompresses past %d bytes", maxBytes)
	}
	return out, nil
}
