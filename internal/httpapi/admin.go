package httpapi

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/store"
)

// DeadLetters is the admin service over parked items (deadletter.Service).
type DeadLetters interface {
	List(ctx context.Context, p store.DeadLetterListParams) ([]store.DeadLetter, error)
	Retry(ctx context.Context, id int64) error
	Drop(ctx context.Context, id int64) error
}

// AdminConfig wires the admin API.
type AdminConfig struct {
	DeadLetters DeadLetters
	Logger      *slog.Logger
}

// DeadLetterView is one entry of GET /admin/v1/dead-letters.
type DeadLetterView struct {
	ID        int64     `json:"id"`
	Kind      string    `json:"kind"`
	Ref       string    `json:"ref"`
	Topic     string    `json:"topic,omitempty"`
	Reason    string    `json:"reason"`
	Attempts  int       `json:"attempts"`
	History   []string  `json:"history"`
	CreatedAt time.Time `json:"createdAt"`
	Payload   []byte    `json:"payload"`
}

// DeadLetterPage is the body of GET /admin/v1/dead-letters.
type DeadLetterPage struct {
	DeadLetters []DeadLetterView `json:"deadLetters"`
	Next        *int64           `json:"next,omitempty"`
}

// AdminRoutes returns the route registration of the admin API. It is served on the admin
// listener, behind AdminAuth.
func AdminRoutes(c AdminConfig) func(mux Router) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return func(mux Router) {
		mux.HandleFunc("GET /admin/v1/dead-letters", c.list)
		mux.HandleFunc("POST /admin/v1/dead-letters/{id}/retry", c.retry)
		mux.HandleFunc("DELETE /admin/v1/dead-letters/{id}", c.drop)
	}
}

// adminTokenName is the name logged for requests authorized by --admin-token.
const adminTokenName = "admin"

// AdminAuth returns next behind the admin token: 401 with a JSON body unless the request
// carries "Authorization: Bearer <token>" (scheme in any case), compared in constant time. It
// guards every route of the admin listener, whatever address the request comes from. An empty
// token refuses every request: the daemon always has one, and a caller that lost it must not
// open the listener.
func AdminAuth(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r)
		if !ok || token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="anchord-admin"`)
			WriteError(w, http.StatusUnauthorized, "unauthorized", errUnauthorized.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(withTokenName(r.Context(), adminTokenName)))
	})
}

// audit logs an admin action with who asked for it: the client's address and the token's name.
func (c AdminConfig) audit(r *http.Request, action string, id int64) {
	c.Logger.InfoContext(r.Context(), "admin action", "action", action, "id", id,
		"client", r.RemoteAddr, "token", cmp.Or(TokenName(r.Context()), "none"))
}

func (c AdminConfig) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := store.DeadLetterListParams{Kind: q.Get("kind"), Limit: 100}
	switch p.Kind {
	case "", store.DeadLetterOperation, store.DeadLetterMessage, store.DeadLetterLedgerBatch, store.DeadLetterActivity:
	default:
		WriteError(w, http.StatusBadRequest, "invalid_parameter", "kind must be operation, message, ledger_batch or activity")
		return
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			WriteError(w, http.StatusBadRequest, "invalid_parameter", "after must be a non-negative integer")
			return
		}
		p.AfterID = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			WriteError(w, http.StatusBadRequest, "invalid_parameter", "limit must be an integer from 1 to 1000")
			return
		}
		p.Limit = n
	}
	list, err := c.DeadLetters.List(r.Context(), p)
	if err != nil {
		c.Logger.ErrorContext(r.Context(), "list dead letters", "error", err)
		WriteError(w, http.StatusServiceUnavailable, "unavailable", "dead letters unavailable")
		return
	}
	page := DeadLetterPage{DeadLetters: make([]DeadLetterView, len(list))}
	for i, d := range list {
		page.DeadLetters[i] = DeadLetterView{
			ID: d.ID, Kind: d.Kind, Ref: d.Ref, Topic: d.Topic, Reason: d.Reason, Attempts: d.Attempts,
			History: d.History, CreatedAt: d.CreatedAt, Payload: d.Payload,
		}
	}
	if len(list) == p.Limit {
		next := list[len(list)-1].ID
		page.Next = &next
	}
	writeJSON(w, http.StatusOK, page)
}

func pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		WriteError(w, http.StatusBadRequest, "invalid_parameter", "id must be a positive integer")
		return 0, false
	}
	return id, true
}

func (c AdminConfig) retry(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	c.audit(r, "dead-letter retry", id)
	if err := c.DeadLetters.Retry(r.Context(), id); err != nil {
		c.writeAdminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"retried": id})
}

func (c AdminConfig) drop(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	c.audit(r, "dead-letter drop", id)
	if err := c.DeadLetters.Drop(r.Context(), id); err != nil {
		c.writeAdminError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"dropped": id})
}

func (c AdminConfig) writeAdminError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, deadletter.ErrNotFound):
		WriteError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, deadletter.ErrBusy):
		WriteError(w, http.StatusConflict, "busy", err.Error())
	case errors.Is(err, deadletter.ErrNotRetryable):
		WriteError(w, http.StatusUnprocessableEntity, "not_retryable", err.Error())
	default:
		c.Logger.ErrorContext(r.Context(), "admin dead letters", "error", err)
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, "unavailable", "dead letters unavailable")
	}
}

// CASAdminConfig wires the admin routes of the content store.
type CASAdminConfig struct {
	// PinMissing queues again every local file the IPFS node lacks (cas.Pinner.PinMissing).
	PinMissing func(ctx context.Context) (int, error)
	Logger     *slog.Logger
}

// CASRoutes returns the admin routes of the content store (--cas-type ipfs).
func CASRoutes(c CASAdminConfig) func(mux Router) {
	return func(mux Router) {
		mux.HandleFunc("POST /admin/v1/cas/pin-missing", func(w http.ResponseWriter, r *http.Request) {
			c.Logger.InfoContext(r.Context(), "admin action", "action", "cas pin-missing",
				"client", r.RemoteAddr, "token", cmp.Or(TokenName(r.Context()), "none"))
			n, err := c.PinMissing(r.Context())
			if err != nil {
				c.Logger.ErrorContext(r.Context(), "pin missing", "error", err)
				w.Header().Set("Retry-After", "5")
				WriteError(w, http.StatusServiceUnavailable, "unavailable", "the IPFS node or the store is unavailable")
				return
			}
			writeJSON(w, http.StatusOK, map[string]int{"queued": n})
		})
	}
}
