package cas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
)

// Errors of Store.Get.
var (
	// ErrNotFound: no content is stored under the CID.
	ErrNotFound = errors.New("cas: content not found")
	// ErrTooLarge: the content is larger than the caller's limit.
	ErrTooLarge = errors.New("cas: content larger than allowed")
	// ErrCorrupt: the stored bytes do not hash to their CID.
	ErrCorrupt = errors.New("cas: stored content does not match its CID")
)

// MirrorReadMaxDefault bounds a read from the mirror when the caller sets no limit.
const MirrorReadMaxDefault = 16 << 20

// StoreConfig configures a Store.
type StoreConfig struct {
	// Version is the CID version of new content; readers accept both.
	Version CIDVersion
	// Mirror, if set (--cas-type ipfs), receives every stored file through the Pinner, and
	// serves the reads the local store misses.
	Mirror     Mirror
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Store is content-addressable storage in the database (table cas_objects): content is stored
// under the CID `ipfs add` would give it, so the batch files can be moved to IPFS unchanged.
type Store struct {
	st      store.Executor
	version CIDVersion
	mirror  Mirror
	// pinned, set by the Pinner, wakes it after a commit queued files.
	pinned func()
	m      *metrics
}

// NewStore returns a Store over st.
func NewStore(cfg StoreConfig, st store.Executor) (*Store, error) {
	reg := cfg.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Store{st: st, version: cfg.Version, mirror: cfg.Mirror, m: m}, nil
}

// Address returns the CID of data in the store's version; it is the batch builder's
// AddressFunc.
func (s *Store) Address(data []byte) string { return ComputeCID(data, s.version) }

// Put stores data and returns its CID. Storing content again is a no-op.
func (s *Store) Put(ctx context.Context, data []byte) (string, error) {
	cid := s.Address(data)
	return cid, s.PutAddressed(ctx, cid, data)
}

// PutAddressed stores data under cid, which the caller computed with Address (the batch builder
// does, to reference files from other files); it is not recomputed here.
func (s *Store) PutAddressed(ctx context.Context, cid string, data []byte) error {
	return s.PutAddressedTx(ctx, s.st, cid, data)
}

// PutAddressedTx is PutAddressed inside the caller's transaction: the batch writer stores a
// batch's files in the transaction that records its anchor, so they commit (and are synced)
// together, once.
func (s *Store) PutAddressedTx(ctx context.Context, tx store.Executor, cid string, data []byte) error {
	if err := tx.CASPut(ctx, cid, data); err != nil {
		return fmt.Errorf("cas put: %w", err)
	}
	if s.mirror != nil {
		// Queued in the same transaction: a file stored here is added to the mirror eventually,
		// whatever happens to this process.
		if err := tx.CASPinQueue(ctx, []string{cid}, false); err != nil {
			return fmt.Errorf("cas put: %w", err)
		}
		if s.pinned != nil {
			store.OnCommit(ctx, s.pinned)
		}
	}
	s.m.written.Add(float64(len(data)))
	s.m.objects.Inc()
	return nil
}

// Get returns the content of cid if it is at most maxSize bytes (maxSize ≤ 0: no limit). The
// bytes are checked against the CID, so corruption at rest is reported, not served. Content the
// local store lacks is read from the mirror, if there is one, checked against its CID, and kept.
//
// cid may also be a hashlink ("hl:uEi…", with or without metadata) or its resource hash alone
// ("uEi…"), the names did:orb batch files and Orb's /cas use: the content is then looked up by
// its sha2-256 digest, here only (the mirror knows CIDs).
func (s *Store) Get(ctx context.Context, cid string, maxSize int) ([]byte, error) {
	if _, err := ParseCID(cid); err != nil {
		if h, herr := parseHashKey(cid); herr == nil {
			return s.getByHash(ctx, h, maxSize)
		}
	}
	data, err := s.getLocal(ctx, cid, maxSize)
	if s.mirror == nil || !errors.Is(err, ErrNotFound) {
		return data, err
	}
	limit := int64(maxSize)
	if limit <= 0 {
		limit = MirrorReadMaxDefault
	}
	data, merr := s.mirror.Get(ctx, cid, limit)
	if merr != nil {
		s.m.mirrorMisses.Inc()
		return nil, fmt.Errorf("%w (the IPFS node: %w)", err, merr)
	}
	if perr := s.st.CASPut(ctx, cid, data); perr != nil {
		return nil, fmt.Errorf("cas get %s: keep the node's copy: %w", cid, perr)
	}
	s.m.mirrorReads.Inc()
	return data, nil
}

func (s *Store) getLocal(ctx context.Context, cid string, maxSize int) ([]byte, error) {
	parsed, err := ParseCID(cid)
	if err != nil {
		return nil, fmt.Errorf("cas get %q: %w", cid, err)
	}
	data, err := s.st.CASGet(ctx, parsed.String())
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("cas get %s: %w", cid, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cas get %s: %w", cid, err)
	}
	if maxSize > 0 && len(data) > maxSize {
		return nil, fmt.Errorf("cas get %s: %d bytes, limit %d: %w", cid, len(data), maxSize, ErrTooLarge)
	}
	if ComputeCID(data, parsed.Version) != parsed.String() {
		return nil, fmt.Errorf("cas get %s: %w", cid, ErrCorrupt)
	}
	s.m.read.Add(float64(len(data)))
	return data, nil
}

// CheckKey accepts what Get takes: a CID, a sha2-256 resource hash ("uEi…") or a hashlink.
func CheckKey(key string) error {
	if _, err := ParseCID(key); err == nil {
		return nil
	}
	if _, err := parseHashKey(key); err != nil {
		return fmt.Errorf("%w: %q is neither a CID nor a sha2-256 resource hash or hashlink", ErrInvalidCID, key)
	}
	return nil
}

// parseHashKey reads a hashlink or a bare resource hash.
func parseHashKey(key string) (activity.Hashlink, error) {
	if !strings.HasPrefix(key, "hl:") {
		key = "hl:" + key
	}
	return activity.ParseHashlink(key)
}

func (s *Store) getByHash(ctx context.Context, h activity.Hashlink, maxSize int) ([]byte, error) {
	name := h.ResourceHash()
	data, err := s.st.CASGetBySHA256(ctx, h.Digest)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("cas get %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cas get %s: %w", name, err)
	}
	if maxSize > 0 && len(data) > maxSize {
		return nil, fmt.Errorf("cas get %s: %d bytes, limit %d: %w", name, len(data), maxSize, ErrTooLarge)
	}
	if h.Verify(data) != nil {
		return nil, fmt.Errorf("cas get %s: %w", name, ErrCorrupt)
	}
	s.m.read.Add(float64(len(data)))
	return data, nil
}

// FetchFunc adapts Get to the batch reader's fetch function.
func (s *Store) FetchFunc(ctx context.Context) func(uri string, maxSize int) ([]byte, error) {
	return func(uri string, maxSize int) ([]byte, error) { return s.Get(ctx, uri, maxSize) }
}
