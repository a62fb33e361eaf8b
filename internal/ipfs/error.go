package ipfs

import (
	"errors"
	"fmt"
)

var (
	// ErrUnavailable wraps a failure to get an answer from the node: it refused the connection,
	// reset it, or did not answer within the timeout. The same request may succeed later.
	ErrUnavailable = errors.New("ipfs node unavailable")
	// ErrTooLarge: the file is larger than the caller's limit.
	ErrTooLarge = errors.New("ipfs: content larger than allowed")
	// ErrMismatch: bytes and CID do not match — the node named added bytes differently from
	// cas, or returned bytes that do not hash to the CID asked for.
	ErrMismatch = errors.New("ipfs: content does not match its CID")
	// ErrUnverifiable: the CID is not of a shape cas computes, so its bytes cannot be checked.
	ErrUnverifiable = errors.New("ipfs: CID cannot be verified")
)

// Error is the node's answer to a request it refused or failed: Kubo's {"Message", "Code"} body,
// or a stream that ended with an X-Stream-Error trailer (Status is then 200).
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is Kubo's error type: 0 normal, 1 client (bad request), 2 implementation, 3 not found.
	Code int
	// Message is the node's text, e.g. "block was not found locally (offline): …".
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("ipfs node answered %d: %s", e.Status, e.Message)
}
