package httpapi

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"
)

// ErrorBody is the JSON body of every error response, as the Sidetree REST API specifies.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// MaxMessageBytes bounds the message of an error body. Messages quote client input only by short
// excerpts (jsontree.QuoteExcerpt); this bound holds even where one was missed.
const MaxMessageBytes = 256

// WriteError writes status with a {"code","message"} body. A message longer than
// MaxMessageBytes is cut (at a rune boundary) and ends with "...".
func WriteError(w http.ResponseWriter, status int, code, message string) {
	if len(message) > MaxMessageBytes {
		n := MaxMessageBytes - len("...")
		for n > 0 && !utf8.RuneStart(message[n]) {
			n--
		}
		message = message[:n] + "..."
	}
	writeJSON(w, status, ErrorBody{Code: code, Message: message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"code":"internal_error","message":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
