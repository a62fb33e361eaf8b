package ledger

import (
	"context"
	"fmt"
	"strconv"
)

// Client submits serialized BatchLists to a ledger and reports the status of batches. See the
// package documentation for what an implementation MUST do.
type Client interface {
	// Submit posts batchList (a serialized BatchList) to the ledger scope named by serviceID
	// ("circuit::service" for Splinter; ignored by Sawtooth, which has one scope).
	Submit(ctx context.Context, batchList []byte, serviceID string) Result
	// Statuses reports the status of each batch id in the scope named by serviceID.
	Statuses(ctx context.Context, ids []string, serviceID string) (map[string]BatchStatus, error)
}

// Class is what a submitter does with a Submit answer.
type Class int

// The classes of a Submit answer.
const (
	// Retry: the ledger did not take the batch now (back-pressure, outage, timeout). Submit the
	// same bytes again later, with backoff.
	Retry Class = iota
	// Accepted: the ledger took the batch (2xx). Poll Statuses for its fate.
	Accepted
	// Rejected: the ledger refused the batch for good (400, 404). Record the error; do not
	// resubmit the same bytes.
	Rejected
)

// String returns the lower-case class name.
func (c Class) String() string {
	switch c {
	case Retry:
		return "retry"
	case Accepted:
		return "accepted"
	case Rejected:
		return "rejected"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Result is the classified answer to one Submit.
type Result struct {
	Class Class
	// HTTPStatus is the status code of the answer, or 0 when there was none (timeout,
	// connection error, cancelled context).
	HTTPStatus int
	// Code is the ledger's own error code when the body carried one (Sawtooth API codes such as
	// "30" or "31"; Splinter's "400"), else "".
	Code string
	// Message is the ledger's error message for Rejected and Retry answers, or the reason when
	// there was no answer ("timeout after 15s", "connection refused", ...). Empty when Accepted.
	Message string
	// MaybeProcessed reports that the ledger may hold the batch although it did not accept it:
	// no answer arrived after the request was sent, or Sawtooth said "Validator Timed Out"
	// (503, code 17: "may or may not have been processed").
	MaybeProcessed bool
	// Err is the transport error when there was no answer, for logging with errors.Is/As.
	Err error
}

// String summarises the result for logs.
func (r Result) String() string {
	s := r.Class.String()
	if r.HTTPStatus != 0 {
		s += " " + strconv.Itoa(r.HTTPStatus)
	}
	if r.Code != "" {
		s += " code " + r.Code
	}
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}

// Status is the fate of a batch as the ledger reports it.
type Status string

// The batch statuses.
const (
	StatusPending   Status = "PENDING"
	StatusCommitted Status = "COMMITTED"
	StatusInvalid   Status = "INVALID"
	StatusUnknown   Status = "UNKNOWN"
)

// Final reports whether the status can no longer change (COMMITTED, INVALID).
func (s Status) Final() bool { return s == StatusCommitted || s == StatusInvalid }

// BatchStatus is one batch's status.
type BatchStatus struct {
	Status Status
	// Message explains an INVALID status: the messages of the invalid transactions, joined by
	// "; ". Empty otherwise.
	Message string
}

// HTTPError is the error Statuses returns when the ledger answered with a non-2xx status.
type HTTPError struct {
	StatusCode int
	// Code and Message are the ledger's error code and message when the body had them.
	Code    string
	Message string
}

// Error implements error.
func (e *HTTPError) Error() string {
	s := fmt.Sprintf("ledger answered HTTP %d", e.StatusCode)
	if e.Code != "" {
		s += " code " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}
