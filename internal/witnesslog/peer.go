package witnesslog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"
)

// tileMaxSize bounds a hash tile read from a peer: 256 hashes.
const tileMaxSize = layout.TileWidth * hashSize

// Errors of the verifications.
var (
	// ErrNotCovered: the checkpoint does not cover the index yet; a later one may.
	ErrNotCovered = errors.New("witnesslog: the checkpoint does not cover the index")
	// ErrNotIncluded: the log's own tiles show that the leaf at the index is not the entry (or
	// do not hash to the checkpoint's root). The log does not hold what was promised.
	ErrNotIncluded = errors.New("witnesslog: the entry is not in the log at the index")
	// ErrInconsistent: two checkpoints of one log commit to trees of which the smaller is not a
	// prefix of the larger (a fork, or rewritten entries). See InconsistencyError.
	ErrInconsistent = errors.New("witnesslog: the log's checkpoints are inconsistent")
)

// InconsistencyError is the evidence that a log broke its append-only promise: two
// checkpoints it signed, and the consistency proof built from its tiles (nil when none was
// needed to see it, e.g. the log shrank).
type InconsistencyError struct {
	Older, Newer Checkpoint
	Proof        [][]byte
	Err          error
}

func (e *InconsistencyError) Error() string {
	return fmt.Sprintf("log %s: checkpoint of size %d is not consistent with checkpoint of size %d: %v",
		e.Newer.Origin, e.Older.Size, e.Newer.Size, e.Err)
}

// Unwrap makes errors.Is(err, ErrInconsistent) hold, and exposes the cause.
func (e *InconsistencyError) Unwrap() []error { return []error{ErrInconsistent, e.Err} }

// FetchFunc reads the resource at path below a log's root ("checkpoint",
// "tile/0/x001/234.p/7", "tile/entries/000") and returns it. It MUST NOT read more than limit
// bytes (more is an error), and MUST return an error wrapping fs.ErrNotExist for a resource
// the log does not have.
type FetchFunc func(ctx context.Context, path string, limit int64) ([]byte, error)

// HTTPFetch returns a FetchFunc that GETs resources below root (the log's URL, e.g.
// "https://b.example/log/") with client, which sets the time limits: the outbound guard's
// client (egress.Guard.Client) for another domain's log.
func HTTPFetch(client *http.Client, root string) (FetchFunc, error) {
	if client == nil {
		return nil, errors.New("witnesslog: HTTPFetch needs an HTTP client")
	}
	base, err := url.Parse(root)
	if err != nil {
		return nil, fmt.Errorf("witnesslog: log URL %q: %w", root, err)
	}
	if base.Scheme != "https" && base.Scheme != "http" || base.Host == "" {
		return nil, fmt.Errorf("witnesslog: log URL %q is not an absolute http(s) URL", root)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	return func(ctx context.Context, path string, limit int64) ([]byte, error) {
		u := base.JoinPath(path)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", u, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", u, err)
		}
		defer resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusNotFound:
			return nil, fmt.Errorf("fetch %s: %w", u, fs.ErrNotExist)
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("fetch %s: status %s", u, resp.Status)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", u, err)
		}
		if int64(len(body)) > limit {
			return nil, fmt.Errorf("fetch %s: more than %d bytes", u, limit)
		}
		return body, nil
	}, nil
}

// Peer verifies another domain's witness log (or this domain's own, read back) from what it
// serves: its checkpoints against its key, inclusion of an entry, consistency of two
// checkpoints. A Peer holds no state; the monitors keep the checkpoints.
type Peer struct {
	origin   string
	verifier note.Verifier
	fetch    FetchFunc
	quorum   Quorum
}

// WithQuorum makes the peer's checkpoints count only when their cosignatures satisfy q
// (Checkpoint.Quorum); nil: the log's signature suffices.
func (p *Peer) WithQuorum(q Quorum) *Peer {
	p.quorum = q
	return p
}

// NewPeer returns a Peer for the log named origin, whose checkpoints pub signs (the peer
// domain's actor key), read through fetch.
func NewPeer(origin string, pub ed25519.PublicKey, fetch FetchFunc) (*Peer, error) {
	if fetch == nil {
		return nil, errors.New("witnesslog: a peer needs a fetch function")
	}
	v, err := newVerifier(origin, pub)
	if err != nil {
		return nil, err
	}
	return &Peer{origin: origin, verifier: v, fetch: fetch}, nil
}

// Checkpoint fetches the peer's latest checkpoint and verifies its signature and origin.
func (p *Peer) Checkpoint(ctx context.Context) (Checkpoint, error) {
	raw, err := p.fetch(ctx, layout.CheckpointPath, CheckpointMaxSize)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("fetch checkpoint of %s: %w", p.origin, err)
	}
	return p.Open(raw)
}

// Open verifies that raw is a checkpoint of the peer's log signed by its key, and whether it
// satisfies the peer's quorum.
func (p *Peer) Open(raw []byte) (Checkpoint, error) {
	cp, err := openCheckpoint(raw, p.origin, p.verifier)
	if err != nil {
		return Checkpoint{}, err
	}
	cp.Quorum = p.quorum == nil || p.quorum.Satisfied(raw)
	return cp, nil
}

// VerifyInclusion checks that entry is the leaf at index in the tree cp commits to, with an
// inclusion proof built from the peer's tiles. It returns an error wrapping ErrNotCovered
// when cp is too small, one wrapping ErrNotIncluded when the proof fails, and another error
// when the tiles cannot be read (worth retrying).
func (p *Peer) VerifyInclusion(ctx context.Context, cp Checkpoint, index uint64, entry []byte) error {
	if err := p.own(cp); err != nil {
		return fmt.Errorf("verify inclusion of %d: %w", index, err)
	}
	if index >= cp.Size {
		return fmt.Errorf("verify inclusion of %d in %s: %w (size %d)", index, p.origin, ErrNotCovered, cp.Size)
	}
	pb, err := client.NewProofBuilder(ctx, cp.Size, p.readTile)
	if err != nil {
		return fmt.Errorf("verify inclusion of %d in %s: %w", index, p.origin, err)
	}
	prf, err := pb.InclusionProof(ctx, index)
	if err != nil {
		return fmt.Errorf("verify inclusion of %d in %s: build the proof: %w", index, p.origin, err)
	}
	leaf := rfc6962.DefaultHasher.HashLeaf(entry)
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, cp.Size, leaf, prf, cp.Hash); err != nil {
		return fmt.Errorf("verify inclusion of %d in %s (size %d): %w: %w", index, p.origin, cp.Size, ErrNotIncluded, err)
	}
	return nil
}

// VerifyConsistency checks that the tree older commits to is a prefix of the tree newer
// commits to, with a consistency proof built from the peer's tiles. A log that is not
// consistent gives an *InconsistencyError carrying both checkpoints; failing to read the tiles
// gives another error (worth retrying).
func (p *Peer) VerifyConsistency(ctx context.Context, older, newer Checkpoint) error {
	if err := errors.Join(p.own(older), p.own(newer)); err != nil {
		return fmt.Errorf("verify consistency: %w", err)
	}
	inconsistent := func(prf [][]byte, err error) error {
		return &InconsistencyError{Older: older, Newer: newer, Proof: prf, Err: err}
	}
	switch {
	case older.Size > newer.Size:
		return inconsistent(nil, errors.New("the log shrank"))
	case older.Size == newer.Size:
		if !bytes.Equal(older.Hash, newer.Hash) {
			return inconsistent(nil, errors.New("two root hashes for one size"))
		}
		return nil
	case older.Size == 0:
		// OpenCheckpoint checked that a size-0 checkpoint has the empty tree's root.
		return nil
	}
	pb, err := client.NewProofBuilder(ctx, newer.Size, p.readTile)
	if err != nil {
		return fmt.Errorf("verify consistency of %s: %w", p.origin, err)
	}
	prf, err := pb.ConsistencyProof(ctx, older.Size, newer.Size)
	if err != nil {
		return fmt.Errorf("verify consistency of %s from %d to %d: build the proof: %w", p.origin, older.Size, newer.Size, err)
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, older.Size, newer.Size, prf, older.Hash, newer.Hash); err != nil {
		return inconsistent(prf, err)
	}
	return nil
}

func (p *Peer) own(cp Checkpoint) error {
	if cp.Origin != p.origin {
		return fmt.Errorf("a checkpoint of %q is not one of %q", cp.Origin, p.origin)
	}
	return nil
}

// readTile is the tessera client's tile fetcher: a partial tile that is gone (the log
// replaced it with the full tile) is read as the full tile, and a tile is bounded and checked
// to be whole hashes.
func (p *Peer) readTile(ctx context.Context, level, index uint64, width uint8) ([]byte, error) {
	tile, err := p.fetch(ctx, layout.TilePath(level, index, width), tileMaxSize)
	if width > 0 && errors.Is(err, fs.ErrNotExist) {
		tile, err = p.fetch(ctx, layout.TilePath(level, index, 0), tileMaxSize)
	}
	if err != nil {
		return nil, fmt.Errorf("tile %d/%d of %s: %w", level, index, p.origin, err)
	}
	if len(tile) > tileMaxSize || len(tile)%hashSize != 0 || len(tile) < tileWidth(width)*hashSize {
		return nil, fmt.Errorf("tile %d/%d of %s: %d bytes is not a tile of width %d", level, index, p.origin, len(tile), tileWidth(width))
	}
	return tile, nil
}
