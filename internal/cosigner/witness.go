package cosigner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flog "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/store"
)

// Prefix is where the witness is served: its submission and monitoring prefix.
const Prefix = "/witness"

// RequestMaxSize bounds an add-checkpoint body: 63 proof lines and a checkpoint with its
// signatures (an ML-DSA-44 cosignature line is about 3.3 KB).
const RequestMaxSize = 64 << 10

// ContentTypeSize is the media type of a 409 answer: the witness's tree size.
const ContentTypeSize = "text/x.tlog.size"

// Logs tells which logs the witness cosigns and which keys sign their checkpoints; *KnownLogs
// is one.
type Logs interface {
	Verifiers(origin string) (note.Verifiers, bool)
}

// Checkpoints is where the witness keeps the latest checkpoint it cosigned per log: a store
// whose swap is atomic across every instance sharing it.
type Checkpoints interface {
	CosignedCheckpointGet(ctx context.Context, origin string) (store.CosignedCheckpoint, error)
	CosignedCheckpointGetByHash(ctx context.Context, originHash string) (store.CosignedCheckpoint, error)
	CosignedCheckpointSwap(ctx context.Context, p store.CosignedCheckpointSwapParams) (bool, error)
}

// Config configures a Witness.
type Config struct {
	Key         *Key
	Logs        Logs
	Checkpoints Checkpoints
	// Logger receives the witness's lines; the caller gives it its component attribute.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now is the clock of the cosignatures' timestamps; nil: time.Now.
	Now func() time.Time
}

// Witness is a c2sp.org/tlog-witness: it cosigns a checkpoint of a known log only when it is
// consistent with the last one it cosigned for that log.
type Witness struct {
	cfg    Config
	logger *slog.Logger
	m      *metrics
}

// New returns a Witness.
func New(cfg Config) (*Witness, error) {
	if cfg.Key == nil || cfg.Logs == nil || cfg.Checkpoints == nil {
		return nil, errors.New("cosigner: a key, the known logs and a checkpoint store are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Witness{cfg: cfg, logger: cfg.Logger.With("witness", cfg.Key.Name()), m: m}, nil
}

// Router is where Register puts the routes; httpapi.Router and *http.ServeMux are both one.
type Router interface {
	Handle(pattern string, handler http.Handler)
}

// Register serves POST /witness/add-checkpoint and GET /witness/<origin hash>/checkpoint.
func (w *Witness) Register(r Router) {
	r.Handle("POST "+Prefix+"/add-checkpoint", http.HandlerFunc(w.serveAddCheckpoint))
	r.Handle("GET "+Prefix+"/{hash}/checkpoint", http.HandlerFunc(w.serveCheckpoint))
}

// StatusError is a refusal of add-checkpoint, with the HTTP status the protocol gives it.
type StatusError struct {
	Code int
	// Size is the size of the latest cosigned checkpoint, for a 409.
	Size uint64
	Err  error
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d: %v", e.Code, e.Err) }
func (e *StatusError) Unwrap() error { return e.Err }

func refuse(code int, format string, args ...any) *StatusError {
	return &StatusError{Code: code, Err: fmt.Errorf(format, args...)}
}

func (w *Witness) serveAddCheckpoint(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, RequestMaxSize))
	var sigs []byte
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			err = refuse(http.StatusRequestEntityTooLarge, "the request is larger than %d bytes", RequestMaxSize)
		} else {
			err = refuse(http.StatusBadRequest, "read the request: %w", err)
		}
	} else {
		sigs, err = w.AddCheckpoint(r.Context(), body)
	}
	code := http.StatusOK
	var se *StatusError
	switch {
	case err == nil:
		rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = rw.Write(sigs)
	case errors.As(err, &se) && se.Code == http.StatusConflict:
		code = se.Code
		rw.Header().Set("Content-Type", ContentTypeSize)
		rw.WriteHeader(code)
		_, _ = fmt.Fprintf(rw, "%d\n", se.Size)
	case errors.As(err, &se):
		code = se.Code
		http.Error(rw, se.Err.Error(), code)
	default:
		code = http.StatusInternalServerError
		w.logger.ErrorContext(r.Context(), "add-checkpoint", "error", err)
		http.Error(rw, "internal error", code)
	}
	w.m.requests.WithLabelValues(strconv.Itoa(code)).Inc()
	w.m.duration.Observe(time.Since(start).Seconds())
}

// AddCheckpoint handles the body of an add-checkpoint request and returns the cosignature
// lines; a refusal is a *StatusError.
func (w *Witness) AddCheckpoint(ctx context.Context, body []byte) ([]byte, error) {
	req, err := ParseAddCheckpoint(body)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, "%w", err)
	}
	origin, _, _ := bytes.Cut(req.Checkpoint, []byte("\n"))
	verifiers, ok := w.cfg.Logs.Verifiers(string(origin))
	if !ok {
		return nil, refuse(http.StatusNotFound, "unknown log %q", origin)
	}
	n, err := note.Open(req.Checkpoint, verifiers)
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified) || errors.As(err, &invalid):
		return nil, refuse(http.StatusForbidden, "the checkpoint of %s carries no valid signature of a trusted key", origin)
	case err != nil:
		return nil, refuse(http.StatusBadRequest, "the checkpoint is not a signed note: %w", err)
	}
	var cp flog.Checkpoint
	if _, err := cp.Unmarshal([]byte(n.Text)); err != nil {
		return nil, refuse(http.StatusBadRequest, "the note is not a checkpoint: %w", err)
	}
	if cp.Origin != string(origin) || len(cp.Hash) != sha256.Size {
		return nil, refuse(http.StatusBadRequest, "the note is not a checkpoint of %s", origin)
	}
	if req.OldSize > cp.Size {
		return nil, refuse(http.StatusBadRequest, "old size %d is larger than the checkpoint's %d", req.OldSize, cp.Size)
	}
	old, err := w.cfg.Checkpoints.CosignedCheckpointGet(ctx, cp.Origin)
	var prev *store.CosignedCheckpoint
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		prev = &old
	}
	if req.OldSize != old.Size {
		return nil, &StatusError{Code: http.StatusConflict, Size: old.Size, Err: fmt.Errorf("old size %d, the latest cosigned is %d", req.OldSize, old.Size)}
	}
	if err := w.consistent(cp, req, old); err != nil {
		w.m.inconsistent.Inc()
		// The log signed a checkpoint that does not extend what we cosigned: possibly a fork.
		w.logger.WarnContext(ctx, "refused a checkpoint inconsistent with the one cosigned", "log", cp.Origin,
			"cosigned_size", old.Size, "size", cp.Size, "reason", err.Err, "checkpoint", string(req.Checkpoint))
		return nil, err
	}
	return w.cosign(ctx, n, cp, prev)
}

// consistent checks the checkpoint against the latest cosigned one (old, zero if none), as
// add-checkpoint requires; a failure is a 422.
func (w *Witness) consistent(cp flog.Checkpoint, req AddCheckpointRequest, old store.CosignedCheckpoint) *StatusError {
	switch {
	case cp.Size == 0 && !bytes.Equal(cp.Hash, rfc6962.DefaultHasher.EmptyRoot()):
		return refuse(http.StatusUnprocessableEntity, "a checkpoint of size 0 must have the empty tree's root")
	case req.OldSize == 0 && len(req.Proof) > 0:
		return refuse(http.StatusUnprocessableEntity, "a proof from size 0 must be empty")
	case req.OldSize == 0:
		return nil
	case req.OldSize == cp.Size:
		if !bytes.Equal(old.Hash, cp.Hash) {
			return refuse(http.StatusUnprocessableEntity, "size %d was cosigned with another root hash", cp.Size)
		}
		return nil
	}
	if err := proof.VerifyConsistency(rfc6962.DefaultHasher, req.OldSize, cp.Size, req.Proof, old.Hash, cp.Hash); err != nil {
		return refuse(http.StatusUnprocessableEntity, "consistency proof from %d to %d: %w", req.OldSize, cp.Size, err)
	}
	return nil
}

// cosign signs the checkpoint and records it, if the record is still prev; the record holds
// the log's verified signatures and ours, for monitors.
func (w *Witness) cosign(ctx context.Context, n *note.Note, cp flog.Checkpoint, prev *store.CosignedCheckpoint) ([]byte, error) {
	signers := w.cfg.Key.Signers(w.cfg.Now())
	ours, err := note.Sign(&note.Note{Text: n.Text}, signers...)
	if err != nil {
		return nil, fmt.Errorf("cosign: %w", err)
	}
	sigs := ours[len(n.Text)+1:]
	// The record holds the log's signatures that verified, then exactly the lines we answer.
	var served bytes.Buffer
	served.WriteString(n.Text + "\n")
	for _, sig := range n.Sigs {
		fmt.Fprintf(&served, "— %s %s\n", sig.Name, sig.Base64)
	}
	served.Write(sigs)
	hash := sha256.Sum256([]byte(cp.Origin))
	ok, err := w.cfg.Checkpoints.CosignedCheckpointSwap(ctx, store.CosignedCheckpointSwapParams{
		Old: prev,
		New: store.CosignedCheckpoint{Origin: cp.Origin, OriginHash: hex.EncodeToString(hash[:]), Size: cp.Size, Hash: cp.Hash, Checkpoint: served.Bytes()},
	})
	if err != nil {
		return nil, fmt.Errorf("record the cosigned checkpoint of %s: %w", cp.Origin, err)
	}
	if !ok {
		// Another request (on this instance or another) advanced the log first.
		cur, err := w.cfg.Checkpoints.CosignedCheckpointGet(ctx, cp.Origin)
		if err != nil {
			return nil, fmt.Errorf("read the cosigned checkpoint of %s: %w", cp.Origin, err)
		}
		return nil, &StatusError{Code: http.StatusConflict, Size: cur.Size, Err: errors.New("another request advanced the log first")}
	}
	w.m.cosigned.Inc()
	w.logger.DebugContext(ctx, "cosigned", "log", cp.Origin, "size", cp.Size)
	return sigs, nil
}

func (w *Witness) serveCheckpoint(rw http.ResponseWriter, r *http.Request) {
	h := r.PathValue("hash")
	if len(h) != 2*sha256.Size || hex.EncodeToString(mustHex(h)) != h {
		http.Error(rw, "not an origin hash (lowercase hex SHA-256)", http.StatusBadRequest)
		return
	}
	c, err := w.cfg.Checkpoints.CosignedCheckpointGetByHash(r.Context(), h)
	switch {
	case errors.Is(err, store.ErrNotFound):
		http.Error(rw, "no checkpoint of this log was cosigned", http.StatusNotFound)
		return
	case err != nil:
		w.logger.ErrorContext(r.Context(), "read a cosigned checkpoint", "error", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-cache")
	_, _ = rw.Write(c.Checkpoint)
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
