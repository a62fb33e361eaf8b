package store

import (
	"context"
	"time"
)

// CASPin is a file queued for the IPFS node (--cas-type ipfs): the local CAS is the source of
// truth, and every file it stores is also added to the node, retried until it is.
type CASPin struct {
	CID      string
	Attempts int
	History  []string
}

// CASPinClaimParams claims due pins for one worker.
type CASPinClaimParams struct {
	Owner string
	Limit int
	// TTL is how long the claim holds (database clock); an expired claim may be taken again.
	TTL time.Duration
}

// CASPinFailParams records a failed add: the pin is due again after Retry (database clock).
type CASPinFailParams struct {
	CID     string
	Owner   string
	Retry   time.Duration
	History []string
}

// CASPinExecutor holds the queue of files to add to the IPFS node.
type CASPinExecutor interface {
	// CASPinQueue queues cids for the node (due at once); a cid already queued or done is left
	// as it is unless requeue is set, which makes it due again (a wiped node, a retried dead
	// letter).
	CASPinQueue(ctx context.Context, cids []string, requeue bool) error
	// CASPinClaim claims up to p.Limit due pins not claimed by a live claim, oldest first.
	CASPinClaim(ctx context.Context, p CASPinClaimParams) ([]CASPin, error)
	// CASPinDone settles a claimed pin as added; ErrLeaseLost if the claim is no longer owner's.
	CASPinDone(ctx context.Context, cid, owner string) error
	// CASPinFail records a failed attempt and releases the claim; ErrLeaseLost as for Done.
	CASPinFail(ctx context.Context, p CASPinFailParams) error
	// CASPinPark takes a claimed pin out of the queue for good (its dead letter is written in
	// the same transaction by the caller); ErrLeaseLost as for Done.
	CASPinPark(ctx context.Context, cid, owner string) error
	// CASPinPending counts the pins not yet added (queued or parked).
	CASPinPending(ctx context.Context) (int, error)
	// CASList pages through the CIDs of the local CAS in CID order, after the given one.
	CASList(ctx context.Context, after string, limit int) ([]string, error)
}
