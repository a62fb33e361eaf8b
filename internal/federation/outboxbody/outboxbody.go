// Package outboxbody is the form in which the activities of our outbox are stored. An anchor's
// Create embeds the anchor's linkset as its AnchorEvent's object, and the publisher stores the
// same linkset in CAS, in the same transaction: at 10,000 operations an anchor that is some
// 460 KB, kept twice. Compact stores such an activity without the embedded linkset when the CAS
// copy gives it back byte for byte; Expand puts it back. Every reader of ap_outbox bodies reads
// them through Expand.
//
// The stored form of a compacted activity is one header line and the activity with the
// embedded linkset's bytes cut out:
//
//	#linkset-in-cas/1 <offset> <length> <sha2-256 of the CAS content> <sha2-256 of the cut bytes>\n<rest>
//
// A full body is JSON and starts with '{', so the two forms cannot be taken for each other:
// rows stored before compaction existed, and activities it does not apply to, are read as
// they are. The CAS content is found by its digest, which is the AnchorEvent url's; the cut
// bytes are the CAS content re-encoded as the activity package writes an embedded linkset, and
// their digest makes an expansion that would not give back the very bytes cut out fail
// instead of serving another body.
//
// Deciding to compact costs what the transaction that stores the activity should not pay: at
// 10,000 operations, writing the embedded linkset, finding it in the body, parsing and
// re-encoding the CAS bytes and hashing them take milliseconds, and on SQLite that transaction
// holds the write lock every other commit waits for. A caller that holds the CAS bytes it is
// about to store (the relay publisher) works the compacted form out with Plan before its
// transaction, and Compaction.Stored leaves inside it only an index lookup: whether CAS holds
// content of that digest. Compact, for a caller without the bytes, does all of it in the
// transaction, reading them from CAS.
package outboxbody

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
)

// magic starts the stored form of a compacted activity, never a JSON body.
const magic = "#linkset-in-cas/1 "

// ErrLinksetMissing: CAS does not have the linkset of an activity stored without it. It is not
// store.ErrNotFound, which a reader takes to mean that the activity is not in the outbox.
var ErrLinksetMissing = errors.New("the linkset of an outbox activity stored without it is not in CAS")

// CAS reads content by its sha2-256 digest; store.Executor is one.
type CAS interface {
	CASGetBySHA256(ctx context.Context, digest []byte) ([]byte, error)
}

// CASChecker tells whether CAS holds content of a sha2-256 digest; store.Executor is one.
type CASChecker interface {
	CASExistsBySHA256(ctx context.Context, digest []byte) (bool, error)
}

// header is what the first line of a compacted body says.
type header struct {
	// offset and length place the cut bytes in the full body.
	offset, length int
	// content is the digest of the CAS content, embedded the digest of the cut bytes.
	content, embedded []byte
}

// Compact returns what to store for activity a, whose JSON is body: body without the linkset
// a's AnchorEvent embeds when cas holds that linkset and re-encoding its CAS bytes gives the
// embedded bytes exactly, else body itself. It must run in the transaction that stores the
// activity, after the linkset was put in CAS: what cas lacks then is never assumed to come.
// CAS content is never deleted, so a compacted body can always be expanded.
func Compact(ctx context.Context, cas CAS, a *activity.Activity, body []byte) ([]byte, error) {
	c, ok := locate(a, body)
	if !ok {
		return body, nil
	}
	content, err := cas.CASGetBySHA256(ctx, c.digest)
	if errors.Is(err, store.ErrNotFound) {
		return body, nil
	}
	if err != nil {
		return nil, fmt.Errorf("compact outbox activity: read its linkset from CAS: %w", err)
	}
	if stored := c.against(content); stored != nil {
		return stored, nil
	}
	return body, nil
}

// Compaction is the stored form of an activity worked out before the transaction that stores
// it (Plan): the compacted form, if the linkset's CAS bytes give back the bytes it cuts, and
// the digest CAS must hold for it to be stored.
type Compaction struct {
	body []byte
	// compacted is nil when the activity is stored whole whatever CAS holds.
	compacted []byte
	// digest is the sha2-256 of the linkset's CAS bytes.
	digest []byte
}

// Plan works out, outside any transaction, how to store activity a, whose JSON is body, given
// content: the bytes the caller puts in CAS as the linkset a's AnchorEvent embeds. It does what
// Compact does with the bytes it reads, with the caller's instead, and reads nothing.
func Plan(a *activity.Activity, body, content []byte) Compaction {
	c, ok := locate(a, body)
	if !ok {
		return Compaction{body: body}
	}
	return Compaction{body: body, compacted: c.against(content), digest: c.digest}
}

// Stored returns what to store: the compacted form when cas holds the linkset Plan was given,
// else the body. It must run in the transaction that stores the activity, after the linkset
// was put in CAS, as Compact must. Knowing that CAS holds content of the linkset's sha2-256 is
// knowing that it holds the very bytes Plan re-encoded: CAS keys its content by the digest it
// computes of it (store.Executor.CASExistsBySHA256), and Plan checked that the bytes it was
// given have that digest.
func (c Compaction) Stored(ctx context.Context, cas CASChecker) ([]byte, error) {
	if c.compacted == nil {
		return c.body, nil
	}
	ok, err := cas.CASExistsBySHA256(ctx, c.digest)
	if err != nil {
		return nil, fmt.Errorf("compact outbox activity: look its linkset up in CAS: %w", err)
	}
	if !ok {
		return c.body, nil
	}
	return c.compacted, nil
}

// cut is where the linkset an activity's AnchorEvent embeds lies in the activity's body.
type cut struct {
	body []byte
	// digest is the hashlink's: the sha2-256 of the linkset's CAS bytes.
	digest []byte
	// embedded are the linkset's bytes as embedded, found at offset in body.
	embedded []byte
	offset   int
}

// locate finds the linkset a's AnchorEvent embeds in body, a's JSON; false if a embeds none or
// body does not hold it as a writes it.
func locate(a *activity.Activity, body []byte) (cut, bool) {
	if a == nil || a.Object == nil || a.Object.AnchorEvent == nil || a.Object.AnchorEvent.Object == nil {
		return cut{}, false
	}
	ev := a.Object.AnchorEvent
	h, err := ev.Hashlink()
	if err != nil {
		return cut{}, false
	}
	embedded, err := json.Marshal(ev.Object)
	if err != nil {
		return cut{}, false
	}
	// Any occurrence will do: the same bytes are put back where they were cut.
	offset := bytes.Index(body, embedded)
	if offset < 0 {
		return cut{}, false
	}
	return cut{body: body, digest: h.Digest, embedded: embedded, offset: offset}, true
}

// against returns the body without the embedded linkset, with its header, when content hashes
// to the hashlink and re-encodes to the embedded bytes exactly; else nil.
func (c cut) against(content []byte) []byte {
	if sum := sha256.Sum256(content); !bytes.Equal(sum[:], c.digest) {
		return nil
	}
	if rebuilt, err := reencode(content); err != nil || !bytes.Equal(rebuilt, c.embedded) {
		return nil
	}
	sum := sha256.Sum256(c.embedded)
	hd := header{offset: c.offset, length: len(c.embedded), content: c.digest, embedded: sum[:]}
	rest := len(c.body) - len(c.embedded)
	out := make([]byte, 0, len(magic)+2*(2*sha256.Size+20)+rest)
	out = append(out, magic...)
	out = strconv.AppendInt(out, int64(hd.offset), 10)
	out = append(out, ' ')
	out = strconv.AppendInt(out, int64(hd.length), 10)
	out = append(out, ' ')
	out = hex.AppendEncode(out, hd.content)
	out = append(out, ' ')
	out = hex.AppendEncode(out, hd.embedded)
	out = append(out, '\n')
	out = append(out, c.body[:c.offset]...)
	return append(out, c.body[c.offset+len(c.embedded):]...)
}

// IsCompact reports whether stored is in the compacted form.
func IsCompact(stored []byte) bool { return bytes.HasPrefix(stored, []byte(magic)) }

// Expand returns the activity stored as stored, byte for byte as it was posted: stored itself
// unless it is compacted, else with the linkset read from cas put back. It fails, rather than
// return anything else, when cas lacks the linkset or its re-encoding is not the bytes cut.
func Expand(ctx context.Context, cas CAS, stored []byte) ([]byte, error) {
	if !IsCompact(stored) {
		return stored, nil
	}
	hd, rest, err := parse(stored)
	if err != nil {
		return nil, err
	}
	content, err := cas.CASGetBySHA256(ctx, hd.content)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("expand outbox activity: linkset %x: %w (%v)", hd.content, ErrLinksetMissing, err)
	}
	if err != nil {
		return nil, fmt.Errorf("expand outbox activity: read its linkset %x from CAS: %w", hd.content, err)
	}
	if sum := sha256.Sum256(content); !bytes.Equal(sum[:], hd.content) {
		return nil, fmt.Errorf("expand outbox activity: the CAS content read for linkset %x does not hash to it", hd.content)
	}
	embedded, err := reencode(content)
	if err != nil {
		return nil, fmt.Errorf("expand outbox activity: linkset %x: %w", hd.content, err)
	}
	if sum := sha256.Sum256(embedded); len(embedded) != hd.length || !bytes.Equal(sum[:], hd.embedded) {
		return nil, fmt.Errorf("expand outbox activity: linkset %x no longer re-encodes to the bytes stored without it", hd.content)
	}
	out := make([]byte, 0, len(rest)+len(embedded))
	out = append(out, rest[:hd.offset]...)
	out = append(out, embedded...)
	return append(out, rest[hd.offset:]...), nil
}

// Size returns the size of the activity stored as stored, without expanding it: what a reader
// that bounds what it embeds needs before it reads the linkset. A body that is not a well-formed
// compacted one counts as it is; Expand reports what is wrong with it.
func Size(stored []byte) int {
	if !IsCompact(stored) {
		return len(stored)
	}
	hd, rest, err := parse(stored)
	if err != nil {
		return len(stored)
	}
	return len(rest) + hd.length
}

// reencode writes the linkset whose JCS form is content as an AnchorEvent embeds it.
func reencode(content []byte) ([]byte, error) {
	var ls activity.Linkset
	if err := json.Unmarshal(content, &ls); err != nil {
		return nil, fmt.Errorf("parse linkset: %w", err)
	}
	return json.Marshal(&ls)
}

// parse reads a compacted body's header and returns it with the rest of the body.
func parse(stored []byte) (header, []byte, error) {
	line, rest, ok := bytes.Cut(stored[len(magic):], []byte{'\n'})
	if !ok {
		return header{}, nil, errors.New("expand outbox activity: compacted body without the end of its header")
	}
	f := bytes.Split(line, []byte{' '})
	if len(f) != 4 {
		return header{}, nil, fmt.Errorf("expand outbox activity: compacted body header %q", line)
	}
	var hd header
	var err1, err2, err3, err4 error
	hd.offset, err1 = strconv.Atoi(string(f[0]))
	hd.length, err2 = strconv.Atoi(string(f[1]))
	hd.content, err3 = hex.DecodeString(string(f[2]))
	hd.embedded, err4 = hex.DecodeString(string(f[3]))
	if err := errors.Join(err1, err2, err3, err4); err != nil || hd.offset < 0 || hd.offset > len(rest) || hd.length <= 0 ||
		len(hd.content) != sha256.Size || len(hd.embedded) != sha256.Size {
		return header{}, nil, fmt.Errorf("expand outbox activity: compacted body header %q", line)
	}
	return hd, rest, nil
}
