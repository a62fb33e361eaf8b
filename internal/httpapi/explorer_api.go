package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
)

// ExplorerStore is what the explorer reads from the database (the store).
type ExplorerStore interface {
	DIDOperationList(ctx context.Context, suffix string) ([]store.DIDOperation, error)
	AnchorGet(ctx context.Context, seq int64) (store.Anchor, error)
	AnchorListLatest(ctx context.Context, p store.AnchorListLatestParams) ([]store.Anchor, error)
	DeadLetterCountByKind(ctx context.Context) (map[string]int64, error)
	WitnessReader
}

// RequestSource rebuilds the requests of index rows, which the index does not keep, from their
// anchors' batch files (observer.Batches).
type RequestSource interface {
	Requests(ctx context.Context, rows []store.DIDOperation) error
}

// ExplorerConfig wires the explorer's read-only JSON API under /explorer/api/. Every route is a
// GET, so "Safe to expose" read tokens guard it like any other read.
type ExplorerConfig struct {
	Profile sidetree.Profile
	Store   ExplorerStore
	// CAS serves the batch files the outlines are read from; Limits are the reader's limits.
	CAS    CASReader
	Limits batchfile.Limits
	// Requests gives the operations of a DID's history their requests; nil lists them without.
	Requests RequestSource
	// Pipeline gives the live pipeline figures; nil answers 404 for /explorer/api/pipeline (an
	// instance that runs no pipeline, such as a submitter).
	Pipeline PipelineSource
	// Federation gives the federation view; nil answers the empty, not-federated view.
	Federation FederationSource
	Logger     *slog.Logger
}

// Explorer API bounds.
const (
	explorerPageDefault = 50
	explorerPageMax     = 1000
	// explorerFilesCacheSize bounds the anchors whose file lists are kept in memory (a few
	// hundred bytes each); files of an anchor never change, so entries never go stale.
	explorerFilesCacheSize = 4096
	// explorerRecentBatches is how many of the latest anchors the pipeline view lists.
	explorerRecentBatches = 30
)

// explorerAPI serves the routes of ExplorerRoutes.
type explorerAPI struct {
	cfg ExplorerConfig

	mu    sync.Mutex
	files map[int64][]batchfile.FileRef // by anchor seq
}

// ExplorerRoutes returns the route registration of the explorer's JSON API for Config.Routes.
func ExplorerRoutes(c ExplorerConfig) func(mux Router) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	a := &explorerAPI{cfg: c, files: map[int64][]batchfile.FileRef{}}
	return func(mux Router) {
		mux.HandleFunc("GET /explorer/api/dids/{did}/operations", a.getDIDOperations)
		mux.HandleFunc("GET /explorer/api/anchors", a.getAnchors)
		mux.HandleFunc("GET /explorer/api/anchors/{seq}", a.getAnchor)
		mux.HandleFunc("GET /explorer/api/pipeline", a.getPipeline)
		mux.HandleFunc("GET /explorer/api/federation", a.getFederation)
		// Anything else under the API is a JSON 404, not the page's index.html (which the
		// explorer serves for every other GET under /explorer/).
		mux.HandleFunc("GET /explorer/api/", func(w http.ResponseWriter, r *http.Request) {
			WriteError(w, http.StatusNotFound, "not_found", "no such explorer API route")
		})
	}
}

// FileView names one batch file. Kind is coreIndex, coreProof, provisionalIndex,
// provisionalProof or chunk; the content is at /cas/{cid}.
type FileView struct {
	Kind string `json:"kind"`
	CID  string `json:"cid"`
}

var fileKinds = map[batchfile.Kind]string{
	batchfile.CoreIndex: "coreIndex", batchfile.CoreProof: "coreProof", batchfile.ProvisionalIndex: "provisionalIndex",
	batchfile.ProvisionalProof: "provisionalProof", batchfile.Chunk: "chunk",
}

func fileViews(refs []batchfile.FileRef) []FileView {
	out := make([]FileView, len(refs))
	for i, r := range refs {
		out[i] = FileView{Kind: fileKinds[r.Kind], CID: r.URI}
	}
	return out
}

// DIDOperationView is one anchored operation of a DID's history.
type DIDOperationView struct {
	Type string `json:"type"`
	// AnchorSeq and Index place the operation: its anchor and its position in that batch.
	AnchorSeq    int64      `json:"anchorSeq"`
	Index        int        `json:"index"`
	AnchorStatus string     `json:"anchorStatus,omitempty"`
	AnchoredAt   *time.Time `json:"anchoredAt,omitempty"`
	// Files are the batch files that carry this operation's data; FilesError says why they
	// could not be listed.
	Files      []FileView      `json:"files"`
	FilesError string          `json:"filesError,omitempty"`
	Request    json.RawMessage `json:"request,omitempty"`
}

// DIDHistory is the body of GET /explorer/api/dids/{did}/operations: a page of the DID's
// anchored operations in anchor order.
type DIDHistory struct {
	DID        string             `json:"did"`
	Suffix     string             `json:"suffix"`
	Total      int                `json:"total"`
	Offset     int                `json:"offset"`
	Operations []DIDOperationView `json:"operations"`
}

func (a *explorerAPI) getDIDOperations(w http.ResponseWriter, r *http.Request) {
	d, err := sidetree.ParseDID(a.cfg.Profile, r.PathValue("did"))
	if err != nil {
		var se *sidetree.Error
		if errors.As(err, &se) {
			WriteError(w, http.StatusBadRequest, string(se.Code), se.Message)
			return
		}
		a.unavailable(w, r, "parse DID", err)
		return
	}
	offset, limit, ok := pageParams(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	rows, err := a.cfg.Store.DIDOperationList(ctx, d.Suffix)
	if err != nil {
		a.unavailable(w, r, "list operations of a DID", err)
		return
	}
	h := DIDHistory{DID: d.ShortForm(), Suffix: d.Suffix, Total: len(rows), Offset: offset, Operations: []DIDOperationView{}}
	if offset < len(rows) {
		rows = rows[offset:min(len(rows), offset+limit)]
	} else {
		rows = nil
	}
	if a.cfg.Requests != nil {
		// Only the page's: each anchor's batch is read once, and kept for the next page.
		if err := a.cfg.Requests.Requests(ctx, rows); err != nil {
			a.unavailable(w, r, "read the requests of a DID's operations", err)
			return
		}
	}
	anchors := map[int64]store.Anchor{}
	for _, row := range rows {
		v := DIDOperationView{Type: row.Type, AnchorSeq: row.AnchorSeq, Index: row.Index, Files: []FileView{}}
		if json.Valid(row.Request) {
			v.Request = row.Request
		}
		an, seen := anchors[row.AnchorSeq]
		if !seen {
			if an, err = a.cfg.Store.AnchorGet(ctx, row.AnchorSeq); err != nil && !errors.Is(err, store.ErrNotFound) {
				a.unavailable(w, r, "get anchor", err)
				return
			}
			anchors[row.AnchorSeq] = an
		}
		if an.Seq != 0 {
			v.AnchorStatus = an.Status
			v.AnchoredAt = anchoredAt(an)
			refs, err := a.outlineFiles(ctx, an)
			if err != nil {
				v.FilesError = err.Error()
			} else {
				o := batchfile.Outline{Files: refs}
				v.Files = fileViews(o.FilesOf(sidetree.OperationType(row.Type)))
			}
		}
		h.Operations = append(h.Operations, v)
	}
	writeJSON(w, http.StatusOK, h)
}

// anchoredAt is when an anchor became final: its completion, or its creation while pending.
func anchoredAt(a store.Anchor) *time.Time {
	if a.CompletedAt != nil {
		return a.CompletedAt
	}
	t := a.CreatedAt
	return &t
}

// outlineFiles returns the files of an anchor's batch, from memory when they were read before.
func (a *explorerAPI) outlineFiles(ctx context.Context, an store.Anchor) ([]batchfile.FileRef, error) {
	a.mu.Lock()
	refs, ok := a.files[an.Seq]
	a.mu.Unlock()
	if ok {
		return refs, nil
	}
	o, err := a.outline(ctx, an)
	if err != nil {
		return nil, err
	}
	a.remember(an.Seq, o.Files)
	return o.Files, nil
}

func (a *explorerAPI) remember(seq int64, refs []batchfile.FileRef) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.files) >= explorerFilesCacheSize {
		for k := range a.files { // evict an arbitrary entry: bounded memory, no bookkeeping
			delete(a.files, k)
			break
		}
	}
	a.files[seq] = refs
}

// outline reads the outline of an anchor's batch. The error is meant for the page: it names
// what is wrong with the batch (a file missing, invalid) without internal detail.
func (a *explorerAPI) outline(ctx context.Context, an store.Anchor) (*batchfile.Outline, error) {
	fetch := func(uri string, maxSize int) ([]byte, error) { return a.cfg.CAS.Get(ctx, uri, maxSize) }
	o, err := batchfile.ReadOutline(an.AnchorString, fetch, a.cfg.Limits)
	if err == nil {
		return o, nil
	}
	var fe *batchfile.FetchError
	var se *sidetree.Error
	switch {
	case errors.As(err, &fe):
		a.cfg.Logger.DebugContext(ctx, "read batch outline", "anchor_seq", an.Seq, "error", err)
		return nil, errors.New("the " + string(fe.Kind) + " " + fe.URI + " could not be read")
	case errors.As(err, &se):
		return nil, errors.New("invalid batch: " + se.Message)
	}
	return nil, errors.New("the batch files could not be read")
}

// AnchorDetail is the body of GET /explorer/api/anchors/{seq}: the anchor, its files and a page
// of its operations in anchor order, as its index files list them.
type AnchorDetail struct {
	Anchor AnchorView `json:"anchor"`
	// Error is why the anchor failed (failed anchors only).
	Error      string          `json:"error,omitempty"`
	Files      []FileView      `json:"files"`
	FilesError string          `json:"filesError,omitempty"`
	Total      int             `json:"total"`
	Offset     int             `json:"offset"`
	Operations []AnchorOpEntry `json:"operations"`
}

// AnchorOpEntry is one operation of an anchored batch.
type AnchorOpEntry struct {
	Position int    `json:"position"`
	Type     string `json:"type"`
	DID      string `json:"did"`
}

func (a *explorerAPI) getAnchor(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		WriteError(w, http.StatusBadRequest, "invalid_parameter", "an anchor sequence number is a positive integer")
		return
	}
	offset, limit, ok := pageParams(w, r)
	if !ok {
		return
	}
	an, err := a.cfg.Store.AnchorGet(r.Context(), seq)
	if errors.Is(err, store.ErrNotFound) {
		WriteError(w, http.StatusNotFound, "not_found", "no anchor "+strconv.FormatInt(seq, 10))
		return
	}
	if err != nil {
		a.unavailable(w, r, "get anchor", err)
		return
	}
	d := AnchorDetail{Anchor: anchorView(an), Error: an.Error, Offset: offset, Files: []FileView{}, Operations: []AnchorOpEntry{}}
	if err := withWitnesses(r.Context(), a.cfg.Store, &d.Anchor); err != nil {
		a.unavailable(w, r, "get anchor", err)
		return
	}
	o, err := a.outline(r.Context(), an)
	if err != nil {
		d.FilesError = err.Error()
		writeJSON(w, http.StatusOK, d)
		return
	}
	a.remember(an.Seq, o.Files)
	if o.ProvisionalErr != nil {
		d.FilesError = "updates not listed: the provisional index file could not be used"
	}
	d.Files = fileViews(o.Files)
	d.Total = len(o.Operations)
	if offset < len(o.Operations) {
		for _, op := range o.Operations[offset:min(len(o.Operations), offset+limit)] {
			d.Operations = append(d.Operations, AnchorOpEntry{
				Position: op.Position, Type: string(op.Type), DID: sidetree.ShortFormDID(a.cfg.Profile, op.Suffix),
			})
		}
	}
	writeJSON(w, http.StatusOK, d)
}

// LatestAnchorPage is the body of GET /explorer/api/anchors: anchors newest first.
type LatestAnchorPage struct {
	Anchors []AnchorView `json:"anchors"`
	// Next is the `before` value of the next (older) page; absent on the last page.
	Next *int64 `json:"next,omitempty"`
}

func (a *explorerAPI) getAnchors(w http.ResponseWriter, r *http.Request) {
	before := int64(0)
	if v := r.URL.Query().Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			WriteError(w, http.StatusBadRequest, "invalid_parameter", "before must be a positive integer")
			return
		}
		before = n
	}
	limit, ok := limitParam(w, r)
	if !ok {
		return
	}
	list, err := a.cfg.Store.AnchorListLatest(r.Context(), store.AnchorListLatestParams{BeforeSeq: before, Limit: limit})
	if err != nil {
		a.unavailable(w, r, "list latest anchors", err)
		return
	}
	page := LatestAnchorPage{Anchors: make([]AnchorView, len(list))}
	for i, an := range list {
		page.Anchors[i] = anchorView(an)
		if err := withWitnesses(r.Context(), a.cfg.Store, &page.Anchors[i]); err != nil {
			a.unavailable(w, r, "list anchors", err)
			return
		}
	}
	if len(list) == limit {
		next := list[len(list)-1].Seq
		page.Next = &next
	}
	writeJSON(w, http.StatusOK, page)
}

func anchorView(a store.Anchor) AnchorView {
	return AnchorView{
		Seq: a.Seq, AnchorString: a.AnchorString, CoreIndexCID: a.CoreIndexCID, OperationCount: a.OpCount,
		Backend: a.Backend, Status: a.Status, CreatedAt: a.CreatedAt, CompletedAt: a.CompletedAt,
		ObservedAt: a.ObservedAt, Record: a.Record, Signature: a.Signature,
	}
}

// pageParams reads offset and limit; it answers 400 and returns false when they are invalid.
func pageParams(w http.ResponseWriter, r *http.Request) (offset, limit int, ok bool) {
	if v := r.URL.Query().Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			WriteError(w, http.StatusBadRequest, "invalid_parameter", "offset must be a non-negative integer")
			return 0, 0, false
		}
		offset = n
	}
	limit, ok = limitParam(w, r)
	return offset, limit, ok
}

func limitParam(w http.ResponseWriter, r *http.Request) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return explorerPageDefault, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > explorerPageMax {
		WriteError(w, http.StatusBadRequest, "invalid_parameter", "limit must be an integer from 1 to "+strconv.Itoa(explorerPageMax))
		return 0, false
	}
	return n, true
}

// unavailable answers 503 for a failed read; the cause is logged, not sent.
func (a *explorerAPI) unavailable(w http.ResponseWriter, r *http.Request, op string, err error) {
	a.cfg.Logger.ErrorContext(r.Context(), op, "error", err)
	w.Header().Set("Retry-After", "1")
	WriteError(w, http.StatusServiceUnavailable, "unavailable", "explorer data unavailable")
}
