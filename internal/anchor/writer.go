package anchor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
)

// Request describes one batch to anchor.
type Request struct {
	AnchorString string
	CoreIndexCID string
	// CoreIndex is the core index file's content (a backend that describes the batch to other
	// domains hashes it).
	CoreIndex []byte
	OpCount   int
	// Ops lists the batch's operations (DID suffix and type), in batch order.
	Ops []OpRef
}

// OpRef names one operation of a batch.
type OpRef struct {
	Suffix string
	Type   string
}

// Record is the anchor record. Its JSON encoding (fields in this order, previous sorted by
// suffix) is what the local backend signs and what is stored with the anchor.
type Record struct {
	Anchor    string `json:"anchor"`
	CoreIndex string `json:"coreIndex"`
	// Previous maps each DID of the batch that was anchored before to its latest earlier anchor
	// string; DIDs created by this batch have none.
	Previous map[string]string `json:"previous,omitempty"`
	Time     time.Time         `json:"time"`
	// Signer identifies the key that signed the record (backend-specific), e.g. "ed25519:<base64url>".
	Signer string `json:"signer,omitempty"`
}

// IssuedAt is the whole second of the record's time (store.Anchor.IssuedAt): in the did:orb
// profile its credential's issuanceDate. 0 for a record without a time.
func (r Record) IssuedAt() int64 {
	if r.Time.IsZero() {
		return 0
	}
	return r.Time.Unix()
}

// Backend makes an anchor final. Anchor runs inside the batch writer's transaction: it must
// insert the anchor row (and whatever rows the backend needs) through tx and do no other I/O
// that could not be rolled back with it.
type Backend interface {
	// Name is stored with each anchor ("local", "ledger").
	Name() string
	// Anchor records rec in tx and returns the inserted anchor.
	Anchor(ctx context.Context, tx store.Executor, req Request, rec Record) (store.Anchor, error)
}

// Config configures a Writer.
type Config struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// NowFunc is the clock of record times; nil means time.Now. Under WholeSeconds the database
	// clock is used instead.
	NowFunc func() time.Time
	// WholeSeconds gives each anchor a time in a later whole second than the domain's previous
	// anchor, from the anchor clock in the store (the did:orb profile: the time is the anchor
	// credential's issuanceDate, and Orb orders a DID's operations by its whole second).
	WholeSeconds bool
}

// Writer builds anchor records and passes them to a Backend.
type Writer struct {
	backend Backend
	cfg     Config
	m       *metrics
	// ahead: the last anchor's time was ahead of the database clock (see time).
	ahead atomic.Bool
}

// NewWriter returns a Writer over backend.
func NewWriter(cfg Config, backend Backend) (*Writer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Writer{backend: backend, cfg: cfg, m: m}, nil
}

// Backend returns the writer's backend.
func (w *Writer) Backend() Backend { return w.backend }

// Write records the anchor of one batch in tx.
func (w *Writer) Write(ctx context.Context, tx store.Executor, req Request) (store.Anchor, error) {
	start := time.Now()
	// The anchor clock first: it locks the clock until tx ends, so in a cluster the anchors'
	// sequence numbers, taken after it, increase with their times.
	at, err := w.time(ctx, tx)
	if err != nil {
		return store.Anchor{}, fmt.Errorf("write anchor %s: %w", req.AnchorString, err)
	}
	prev, err := previousAnchors(ctx, tx, req.Ops)
	if err != nil {
		return store.Anchor{}, fmt.Errorf("write anchor %s: %w", req.AnchorString, err)
	}
	rec := Record{Anchor: req.AnchorString, CoreIndex: req.CoreIndexCID, Previous: prev, Time: at}
	a, err := w.backend.Anchor(ctx, tx, req, rec)
	if err != nil {
		return store.Anchor{}, fmt.Errorf("write anchor %s: %w", req.AnchorString, err)
	}
	w.m.written.WithLabelValues(w.backend.Name(), a.Status).Inc()
	w.m.writeLatency.Observe(time.Since(start).Seconds())
	return a, nil
}

// previousAnchors looks up the latest anchor of every DID of the batch that is not created by it.
func previousAnchors(ctx context.Context, tx store.Executor, ops []OpRef) (map[string]string, error) {
	var suffixes []string
	for _, op := range ops {
		if op.Type != "create" {
			suffixes = append(suffixes, op.Suffix)
		}
	}
	if len(suffixes) == 0 {
		return nil, nil
	}
	last, err := tx.DIDLastAnchors(ctx, suffixes)
	if err != nil {
		return nil, fmt.Errorf("previous anchors: %w", err)
	}
	strs := make(map[int64]string)
	prev := make(map[string]string, len(last))
	for suffix, seq := range last {
		s, ok := strs[seq]
		if !ok {
			a, err := tx.AnchorGet(ctx, seq)
			if err != nil {
				return nil, fmt.Errorf("previous anchors: %w", err)
			}
			s = a.AnchorString
			strs[seq] = s
		}
		prev[suffix] = s
	}
	return prev, nil
}

// Marshal returns the record's canonical bytes: encoding/json writes struct fields in
// declaration order and map keys sorted, so equal records give equal bytes.
func (r Record) Marshal() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode anchor record: %w", err)
	}
	return b, nil
}

// SortedPrevious returns the suffixes of r.Previous in order, for display.
func (r Record) SortedPrevious() []string {
	out := make([]string, 0, len(r.Previous))
	for s := range r.Previous {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
