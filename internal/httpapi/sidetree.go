package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// Operations accepts operation requests (intake.Service).
type Operations interface {
	Submit(ctx context.Context, body []byte) ([]byte, error)
}

// Resolver resolves DIDs (observer.Resolver). Resolve renders the reference implementation's
// result; ResolveVersion adds DID Resolution's document metadata and selects a version (a zero
// versionID and versionTime select the latest).
type Resolver interface {
	Resolve(ctx context.Context, did string) ([]byte, sidetree.ResolutionStatus, error)
	ResolveVersion(ctx context.Context, did, versionID string, versionTime time.Time) ([]byte, sidetree.ResolutionStatus, error)
}

// CASReader serves CAS content (cas.Store).
type CASReader interface {
	Get(ctx context.Context, cid string, maxSize int) ([]byte, error)
}

// AnchorLister lists anchors (the store).
type AnchorLister interface {
	AnchorList(ctx context.Context, p store.AnchorListParams) ([]store.Anchor, error)
}

// SidetreeConfig wires the Sidetree REST API.
type SidetreeConfig struct {
	Operations Operations
	Resolver   Resolver
	// DIDMethod is the node's method ("ion", "ion:test"); the Universal Resolver path answers
	// methodNotSupported for DIDs of other methods.
	DIDMethod string
	// Orb makes the Sidetree path and /cas answer as Orb's do (the did:orb profile; orb.go).
	Orb bool
	// VersionNotFound classifies the Resolver's error for a version that does not exist
	// (observer.ErrNoSuchVersion).
	VersionNotFound error
	CAS             CASReader
	// CASNotFound and CASTooLarge classify CAS errors (cas.ErrNotFound, cas.ErrTooLarge).
	CASNotFound error
	CASInvalid  error
	Anchors     AnchorLister
	// Witnesses, if set, names each witnessed anchor's credential and witnesses.
	Witnesses WitnessReader
	// RetryAfter is the Retry-After of a 503.
	RetryAfter time.Duration
	// MaxCASSize bounds a CAS response (the largest batch file, 10 MB).
	MaxCASSize int
	Logger     *slog.Logger
}

// Anchor listing bounds.
const (
	anchorsLimitDefault = 100
	anchorsLimitMax     = 1000
)

// SidetreeRoutes returns the route registration of the Sidetree REST API, the Universal
// Resolver driver path and CAS for Config.Routes.
func SidetreeRoutes(c SidetreeConfig) func(mux Router) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = time.Second
	}
	return func(mux Router) {
		mux.HandleFunc("POST /sidetree/v1/operations", c.postOperation)
		mux.HandleFunc("GET /sidetree/v1/identifiers/{did}", c.getIdentifier)
		mux.HandleFunc("GET /1.0/identifiers/{did}", c.getDriverIdentifier)
		mux.HandleFunc("GET /sidetree/v1/anchors", c.getAnchors)
		mux.HandleFunc("GET /cas/{cid}", c.getCAS)
	}
}

func (c SidetreeConfig) postOperation(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe) && c.Orb:
			// Orb reads any body and refuses it by the protocol's operation size.
			c.writeRefused(w, string(sidetree.CodeOperationTooLarge),
				fmt.Sprintf("operation size[%d] exceeds maximum operation size[%d]", max(r.ContentLength, mbe.Limit+1), sidetree.OrbMaxOperationSize))
		case errors.As(err, &mbe):
			WriteError(w, http.StatusRequestEntityTooLarge, "request_too_large", "request body exceeds "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
		default:
			// The error names the connection's addresses; the client needs none of it.
			c.Logger.DebugContext(r.Context(), "read request body", "error", err)
			c.writeRefused(w, "invalid_request", "could not read the request body")
		}
		return
	}
	resp, err := c.Operations.Submit(r.Context(), body)
	if err != nil {
		c.writeOperationError(w, r, err)
		return
	}
	if resp == nil && c.Orb {
		// Orb encodes the nil result of an operation other than a create.
		resp = []byte("null\n")
	}
	if resp == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/did+ld+json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(resp)
}

func (c SidetreeConfig) writeOperationError(w http.ResponseWriter, r *http.Request, err error) {
	var se *sidetree.Error
	switch {
	case errors.As(err, &se):
		c.writeRefused(w, string(se.Code), se.Message)
	case errors.Is(err, intake.ErrRetryLater):
		// Frequent under load (the backlog is full), so at Debug; the cause may name internal
		// addresses and stays out of the body.
		c.Logger.DebugContext(r.Context(), "operation not accepted", "error", err)
		w.Header().Set("Retry-After", strconv.Itoa(int((c.RetryAfter+time.Second-1)/time.Second)))
		c.writeError(w, http.StatusServiceUnavailable, "unavailable", intake.ErrRetryLater.Error())
	case r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		c.writeError(w, http.StatusServiceUnavailable, "canceled", "request canceled")
	default:
		c.Logger.ErrorContext(r.Context(), "submit operation", "error", err)
		c.writeError(w, http.StatusInternalServerError, "internal_error", "internal error")
	}
}

func (c SidetreeConfig) getCAS(w http.ResponseWriter, r *http.Request) {
	cid := r.PathValue("cid")
	data, err := c.CAS.Get(r.Context(), cid, c.MaxCASSize)
	notFound := c.CASNotFound != nil && errors.Is(err, c.CASNotFound)
	invalid := c.CASInvalid != nil && errors.Is(err, c.CASInvalid)
	switch {
	case c.Orb && (notFound || invalid):
		// Orb looks up whatever it is given, and finds nothing.
		writeOrbCASNotFound(w, cid)
		return
	case notFound:
		WriteError(w, http.StatusNotFound, "not_found", "no content for this CID")
		return
	case invalid:
		WriteError(w, http.StatusBadRequest, "invalid_cid", "not a CID or content hash: expected CIDv0 (Qm...), base32 CIDv1 (b...), a sha2-256 resource hash (uEi...) or a hashlink (hl:uEi...)")
		return
	case err != nil && c.Orb:
		c.Logger.ErrorContext(r.Context(), "cas get", "error", err)
		writeOrbText(w, http.StatusInternalServerError, orbTextSniffed, "failure while finding content at "+cid)
		return
	case err != nil:
		c.Logger.ErrorContext(r.Context(), "cas get", "error", err)
		WriteError(w, http.StatusInternalServerError, "internal_error", "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(data)
}

// AnchorView is one entry of GET /sidetree/v1/anchors.
type AnchorView struct {
	Seq            int64      `json:"seq"`
	AnchorString   string     `json:"anchorString"`
	CoreIndexCID   string     `json:"coreIndexCid"`
	OperationCount int        `json:"operationCount"`
	Backend        string     `json:"backend"`
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"createdAt"`
	CompletedAt    *time.Time `json:"completedAt,omitempty"`
	ObservedAt     *time.Time `json:"observedAt,omitempty"`
	Record         []byte     `json:"record,omitempty"`
	Signature      []byte     `json:"signature,omitempty"`
	// Credential is the id of a witnessed anchor's credential (served at /vc/<id>), and
	// Witnesses its witnesses; Status is then in-process while proofs are collected.
	Credential string        `json:"credential,omitempty"`
	Witnesses  []WitnessView `json:"witnesses,omitempty"`
}

// AnchorPage is the body of GET /sidetree/v1/anchors.
type AnchorPage struct {
	Anchors []AnchorView `json:"anchors"`
	// Next is the `after` value of the next page; absent on the last page.
	Next *int64 `json:"next,omitempty"`
}

func (c SidetreeConfig) getAnchors(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, limit := int64(0), anchorsLimitDefault
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			WriteError(w, http.StatusBadRequest, "invalid_parameter", "after must be a non-negative integer")
			return
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > anchorsLimitMax {
			WriteError(w, http.StatusBadRequest, "invalid_parameter", "limit must be an integer from 1 to "+strconv.Itoa(anchorsLimitMax))
			return
		}
		limit = n
	}
	list, err := c.Anchors.AnchorList(r.Context(), store.AnchorListParams{AfterSeq: after, Limit: limit})
	if err != nil {
		c.Logger.ErrorContext(r.Context(), "list anchors", "error", err)
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, "unavailable", "anchor list unavailable")
		return
	}
	page := AnchorPage{Anchors: make([]AnchorView, len(list))}
	for i, a := range list {
		page.Anchors[i] = anchorView(a)
		if c.Witnesses != nil {
			if err := withWitnesses(r.Context(), c.Witnesses, &page.Anchors[i]); err != nil {
				c.Logger.ErrorContext(r.Context(), "list anchors", "error", err)
				WriteError(w, http.StatusServiceUnavailable, "unavailable", "anchors could not be read")
				return
			}
		}
	}
	if len(list) == limit {
		next := list[len(list)-1].Seq
		page.Next = &next
	}
	writeJSON(w, http.StatusOK, page)
}
