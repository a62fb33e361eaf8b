package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxMessageLen bounds a message taken from a body that is not a JSON error document.
const maxMessageLen = 512

// ResultFromResponse classifies an HTTP answer: 2xx Accepted; 400 and 404 Rejected; anything
// else (408, 429, 5xx, 3xx, other 4xx such as 401 or 403) Retry. 401/403 are Retry rather than
// Rejected because they describe our credentials, not the batch: once an operator fixes them
// the same bytes succeed. body may be empty or not JSON; the message then falls back to the
// body text or the status text.
func ResultFromResponse(statusCode int, body []byte) Result {
	r := Result{HTTPStatus: statusCode}
	switch {
	case statusCode >= 200 && statusCode < 300:
		r.Class = Accepted
		return r
	case statusCode == http.StatusBadRequest || statusCode == http.StatusNotFound:
		r.Class = Rejected
	default:
		r.Class = Retry
	}
	r.Code, r.Message = ParseErrorBody(statusCode, body)
	return r
}

// ResultFromError classifies a request that got no answer. ctx is the caller's context (not the
// per-request one), so that a cancelled caller is told apart from a request timeout. A request
// whose connection was never established is not MaybeProcessed; any other is.
func ResultFromError(ctx context.Context, err error, timeout time.Duration) Result {
	r := Result{Class: Retry, Err: err, MaybeProcessed: true}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		r.MaybeProcessed = false
	}
	var netErr net.Error
	switch {
	case ctx.Err() != nil:
		r.Message = "request abandoned: " + ctx.Err().Error()
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		r.Message = "timeout after " + timeout.String()
	default:
		r.Message = err.Error()
	}
	return r
}

// ParseErrorBody extracts the ledger's error code and message from a non-2xx body. It reads the
// Sawtooth shape {"error":{"code":30,"title":"…","message":"…"}}, the Splinter shape
// {"code":"400","message":"…"} and a bare {"message":"…"}. A body in none of these shapes
// (empty, HTML from a proxy, plain text) yields no code and its trimmed text, or the status
// text when it is empty.
func ParseErrorBody(statusCode int, body []byte) (code, message string) {
	var doc struct {
		Error *struct {
			Code    json.RawMessage `json:"code"`
			Title   string          `json:"title"`
			Message string          `json:"message"`
		} `json:"error"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &doc) == nil {
		switch {
		case doc.Error != nil:
			msg := doc.Error.Message
			if doc.Error.Title != "" && msg != "" {
				msg = doc.Error.Title + ": " + msg
			} else if msg == "" {
				msg = doc.Error.Title
			}
			if msg != "" || len(doc.Error.Code) > 0 {
				return rawCode(doc.Error.Code), orStatusText(msg, statusCode)
			}
		case doc.Message != "" || len(doc.Code) > 0:
			return rawCode(doc.Code), orStatusText(doc.Message, statusCode)
		}
	}
	return "", orStatusText(bodyText(trimmed), statusCode)
}

// rawCode renders a JSON code that may be a number (Sawtooth) or a string (Splinter).
func rawCode(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func bodyText(b []byte) string {
	if !utf8.Valid(b) {
		return ""
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > maxMessageLen {
		s = s[:maxMessageLen]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

func orStatusText(msg string, statusCode int) string {
	if msg != "" {
		return msg
	}
	if t := http.StatusText(statusCode); t != "" {
		return strconv.Itoa(statusCode) + " " + t
	}
	return "HTTP " + strconv.Itoa(statusCode)
}
