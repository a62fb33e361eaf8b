package devledger

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/anchord/anchord/internal/ledger"
)

// scabbardError writes Splinter's error body, {"code":"<status>","message":"…"}.
func scabbardError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"code": strconv.Itoa(status), "message": message})
}

func scabbardScope(r *http.Request) string {
	return r.PathValue("circuit") + "::" + r.PathValue("service")
}

// handleScabbardSubmit serves POST /scabbard/{circuit}/{service}/batches the way scabbard
// does: 202 with a link, 400 for a body that is not a list of valid batches, and 429 with no
// body when it will not take more batches. Scabbard itself never answers 503; the unavailable
// fault stands for a proxy in front of it.
func (s *Server) handleScabbardSubmit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		scabbardError(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	scope := scabbardScope(r)
	sub := s.submit(scope, body)
	if sub.rejectErr != nil {
		s.logger.DebugContext(r.Context(), "batch list refused", "scope", scope, "error", sub.rejectErr)
		scabbardError(w, http.StatusBadRequest, "Invalid body: not a valid list of batches")
		return
	}
	switch sub.fault {
	case faultUnavailable:
		scabbardError(w, http.StatusServiceUnavailable, "The service is unavailable")
	case faultTooManyRequests:
		w.WriteHeader(http.StatusTooManyRequests)
	case faultBadRequest:
		scabbardError(w, http.StatusBadRequest, "No valid batches provided")
	case faultTimeout:
		if s.hang(r) {
			scabbardError(w, http.StatusServiceUnavailable, "The request timed out")
		}
	default:
		q := url.Values{"ids": {strings.Join(sub.ids, ",")}}
		writeJSON(w, http.StatusAccepted, map[string]string{
			"link": "/scabbard/" + url.PathEscape(r.PathValue("circuit")) + "/" +
				url.PathEscape(r.PathValue("service")) + "/batch_statuses?" + q.Encode(),
		})
	}
}

// handleScabbardStatuses serves GET /scabbard/{circuit}/{service}/batch_statuses?ids=…. A
// pending batch is reported Pending during the first half of the commit delay and Valid
// (executed, not yet committed) during the second. The wait parameter is ignored.
func (s *Server) handleScabbardStatuses(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("ids")
	if q == "" {
		scabbardError(w, http.StatusBadRequest, "No batch IDs specified")
		return
	}
	ids := strings.Split(q, ",")
	scope := scabbardScope(r)

	type statusJSON struct {
		Type    string `json:"statusType"`
		Message []any  `json:"message"`
	}
	type timestampJSON struct {
		Secs  int64 `json:"secs_since_epoch"`
		Nanos int   `json:"nanos_since_epoch"`
	}
	type infoJSON struct {
		ID        string        `json:"id"`
		Status    statusJSON    `json:"status"`
		Timestamp timestampJSON `json:"timestamp"`
	}
	out := make([]infoJSON, 0, len(ids))
	s.mu.Lock()
	s.commitDueLocked()
	now := s.cfg.NowFunc()
	for _, id := range ids {
		info := infoJSON{ID: id, Status: statusJSON{Type: "Unknown", Message: []any{}}}
		info.Timestamp = timestampJSON{Secs: now.Unix(), Nanos: now.Nanosecond()}
		if rec := s.chain.lookup(batchKey{scope: scope, id: id}); rec != nil {
			info.Timestamp = timestampJSON{Secs: rec.acceptedAt.Unix(), Nanos: rec.acceptedAt.Nanosecond()}
			switch rec.status {
			case ledger.StatusPending:
				info.Status.Type = "Pending"
				if now.Sub(rec.acceptedAt) >= s.cfg.CommitDelay/2 {
					info.Status.Type = "Valid"
					info.Status.Message = txnList(rec)
				}
			case ledger.StatusCommitted:
				info.Status.Type = "Committed"
				info.Status.Message = txnList(rec)
			case ledger.StatusInvalid:
				info.Status.Type = "Invalid"
				for _, it := range rec.invalid {
					info.Status.Message = append(info.Status.Message, scabbardInvalidTxn{
						TransactionID: it.id, ErrorMessage: it.message, ErrorData: []int{},
					})
				}
			}
		}
		out = append(out, info)
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// scabbardValidTxn and scabbardInvalidTxn are the entries of a scabbard status message.
type scabbardValidTxn struct {
	TransactionID string `json:"transaction_id"`
}

type scabbardInvalidTxn struct {
	TransactionID string `json:"transaction_id"`
	ErrorMessage  string `json:"error_message"`
	// ErrorData is a byte array, which scabbard's serde renders as an array of numbers.
	ErrorData []int `json:"error_data"`
}

func txnList(rec *record) []any {
	out := make([]any, 0, len(rec.txns))
	for _, t := range rec.txns {
		out = append(out, scabbardValidTxn{TransactionID: t.ID})
	}
	return out
}
