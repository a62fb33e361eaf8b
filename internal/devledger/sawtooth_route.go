package devledger

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

// apiError is a Sawtooth REST API error: its HTTP status, fixed API code, title and message
// (hyperledger/sawtooth-core rest_api/sawtooth_rest_api/exceptions.py).
type apiError struct {
	status  int
	code    int
	title   string
	message string
}

// The Sawtooth errors the devledger answers with.
var (
	errValidatorDisconnected = apiError{http.StatusServiceUnavailable, 18, "Validator Disconnected",
		"The validator disconnected before sending a response. Try your request again later."}
	errValidatorTimedOut = apiError{http.StatusServiceUnavailable, 17, "Validator Timed Out",
		"The request timed out while waiting for a response from the validator. Your request may or may not have been processed."}
	errBatchesInvalid = apiError{http.StatusBadRequest, 30, "Submitted Batches Invalid",
		"The submitted BatchList was rejected by the validator. It was poorly formed, or has an invalid signature."}
	errQueueFull = apiError{http.StatusTooManyRequests, 31, "Unable to Accept Batches",
		"The validator cannot currently accept more batches, due to a full queue.  Please submit your request again."}
	errNoBatches = apiError{http.StatusBadRequest, 34, "No Batches Submitted",
		"The protobuf BatchList you submitted was empty and contained no Batches. You must submit at least one Batch."}
	errBadProtobuf = apiError{http.StatusBadRequest, 35, "Protobuf Not Decodable",
		"The protobuf BatchList you submitted was malformed and could not be read."}
	errSubmitContentType = apiError{http.StatusBadRequest, 42, "Wrong Content Type",
		"Batches must be submitted in a BatchList protobuf binary, with a 'Content-Type' header of 'application/octet-stream'."}
	errStatusContentType = apiError{http.StatusBadRequest, 43, "Wrong Content Type",
		"Requests for batch statuses sent as a POST must have a 'Content-Type' header of 'application/json'."}
	errStatusBody = apiError{http.StatusBadRequest, 46, "Bad Status Request",
		"Requests for batch statuses sent as a POST must have a JSON formatted body with an array of at least one id string."}
	errInvalidID = apiError{http.StatusBadRequest, 60, "Invalid Resource Id",
		"Blockchain items are identified by 128 character hex-strings. A submitted block, batch, or transaction id was invalid: "}
	errStatusIDQuery = apiError{http.StatusBadRequest, 66, "Id Query Invalid or Missing",
		"Requests for batch statuses sent as a GET request must have an 'id' query parameter with a comma-separated list of at least one batch id."}
	errBodyTooLarge = apiError{http.StatusRequestEntityTooLarge, 0, "Request Entity Too Large",
		"The request body is larger than the server accepts."}
)

func writeAPIError(w http.ResponseWriter, e apiError, detail string) {
	writeJSON(w, e.status, map[string]any{"error": map[string]any{
		"code": e.code, "title": e.title, "message": e.message + detail,
	}})
}

// handleSawtoothSubmit serves POST /batches.
func (s *Server) handleSawtoothSubmit(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/octet-stream" {
		writeAPIError(w, errSubmitContentType, "")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		writeAPIError(w, errBodyTooLarge, "")
		return
	}
	sub := s.submit(scopeSawtooth, body)
	switch {
	case errors.Is(sub.rejectErr, sawtooth.ErrNoBatches):
		writeAPIError(w, errNoBatches, "")
		return
	case errors.Is(sub.rejectErr, sawtooth.ErrUndecodable):
		writeAPIError(w, errBadProtobuf, "")
		return
	case sub.rejectErr != nil:
		s.logger.DebugContext(r.Context(), "batch list refused", "error", sub.rejectErr)
		writeAPIError(w, errBatchesInvalid, " ("+sub.rejectErr.Error()+")")
		return
	}
	switch sub.fault {
	case faultUnavailable:
		writeAPIError(w, errValidatorDisconnected, "")
	case faultTooManyRequests:
		writeAPIError(w, errQueueFull, "")
	case faultBadRequest:
		writeAPIError(w, errBatchesInvalid, " (injected fault)")
	case faultTimeout:
		if s.hang(r) {
			writeAPIError(w, errValidatorTimedOut, "")
		}
	default: // none, lost, invalid: the client sees a normal acceptance
		writeJSON(w, http.StatusAccepted, map[string]string{
			"link": "http://" + r.Host + "/batch_statuses?id=" + strings.Join(sub.ids, ","),
		})
	}
}

// handleSawtoothStatuses serves GET /batch_statuses?id=… and POST /batch_statuses. The wait
// parameter is accepted and ignored: the answer is always immediate.
func (s *Server) handleSawtoothStatuses(w http.ResponseWriter, r *http.Request) {
	var ids []string
	if r.Method == http.MethodPost {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeAPIError(w, errStatusContentType, "")
			return
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)).Decode(&ids); err != nil || len(ids) == 0 {
			writeAPIError(w, errStatusBody, "")
			return
		}
	} else {
		q := r.URL.Query().Get("id")
		if q == "" {
			writeAPIError(w, errStatusIDQuery, "")
			return
		}
		ids = strings.Split(q, ",")
	}
	for _, id := range ids {
		if !sawtooth.IsID(id) {
			writeAPIError(w, errInvalidID, id)
			return
		}
	}

	type invalidTxnJSON struct {
		ID      string `json:"id"`
		Message string `json:"message,omitempty"`
	}
	type statusJSON struct {
		ID                  string           `json:"id"`
		InvalidTransactions []invalidTxnJSON `json:"invalid_transactions"`
		Status              ledger.Status    `json:"status"`
	}
	data := make([]statusJSON, 0, len(ids))
	s.mu.Lock()
	s.commitDueLocked()
	for _, id := range ids {
		st := statusJSON{ID: id, Status: ledger.StatusUnknown, InvalidTransactions: []invalidTxnJSON{}}
		if rec := s.chain.lookup(batchKey{scope: scopeSawtooth, id: id}); rec != nil {
			st.Status = rec.status
			for _, it := range rec.invalid {
				st.InvalidTransactions = append(st.InvalidTransactions, invalidTxnJSON{ID: it.id, Message: it.message})
			}
		}
		data = append(data, st)
	}
	s.mu.Unlock()

	resp := map[string]any{"data": data}
	if r.Method != http.MethodPost {
		resp["link"] = "http://" + r.Host + r.URL.RequestURI()
	}
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the status is sent; a failed write means the client left
}
