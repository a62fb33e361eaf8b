package store

import (
	"context"
	"time"
)

// AnchorClock is the time of this domain's latest anchor, which the did:orb profile keeps so
// that no two of the domain's anchors fall in one whole second: Orb orders a DID's operations
// by the whole second of their anchor's time, and drops an operation that is not in a later
// second than the one it follows. Times are kept to the microsecond.
type AnchorClock struct {
	// Last is the time of the latest anchor; zero when none was recorded.
	Last time.Time
	// WrittenAt is when, by the database clock, Last was recorded.
	WrittenAt time.Time
}

// AnchorClockExecutor holds the anchor clock.
type AnchorClockExecutor interface {
	// AnchorClockGet returns the anchor clock. Inside a transaction it stays locked until the
	// transaction ends (PostgreSQL: the row is read FOR UPDATE; SQLite: write transactions are
	// serialised), so concurrent transactions that read and set it take turns; outside one, a
	// read on PostgreSQL waits for a transaction that holds it, and so sees its time.
	AnchorClockGet(ctx context.Context) (AnchorClock, error)
	// AnchorClockSet records the anchor clock.
	AnchorClockSet(ctx context.Context, c AnchorClock) error
}
