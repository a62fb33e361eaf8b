package store

import "context"

// DIDState is a DID's state as the per-DID index keeps it beside the DID's operations: the
// binary form of a sidetree.StateRecord, which the store stores and never reads, and where the
// DID's operations were anchored.
type DIDState struct {
	Suffix string
	State  []byte
	// Positions name the DID's rows of the per-DID index (DIDOperationInsertMany), in anchor
	// order: every one, whether its operation applies or not. A backend that keeps no index of
	// those rows by suffix (SQLite, once an older database is moved to its current layout;
	// PostgreSQL in a database that indexed nothing before its migration 30) finds a DID's
	// operations, its anchors and the DID itself through them; one that does may ignore them.
	Positions []DIDPosition
}

// DIDPosition is where one of a DID's operations was anchored: its anchor's sequence number and
// its index in the batch, the key of its row in the per-DID index.
type DIDPosition struct {
	AnchorSeq int64
	Index     int
}

// DIDStateFillSetting names the setting that says the states of DIDs indexed before did_states
// existed are still to be computed: the migration that creates the table sets it when the index
// already holds operations, to "" (nothing computed yet), and the daemon's fill advances it to
// "after:<suffix>" and then "done" (observer.FillStates).
const DIDStateFillSetting = "did_states_fill"

// DIDStateExecutor holds the queries of did_states, one row per DID with indexed operations.
//
// The observer replaces a DID's state in the transaction that indexes the DID's operations.
// Where several observers index at once (PostgreSQL), two transactions may index operations of
// one DID: each first inserts the states of DIDs that have none (DIDStateInsertMany) and then
// locks the rest (DIDStateLockMany), both in suffix order, so that they take turns on each DID
// and never deadlock, and the later one computes from what the earlier one committed.
type DIDStateExecutor interface {
	// DIDStateGet returns the stored state of a DID (DIDState.State), or ErrNotFound.
	DIDStateGet(ctx context.Context, suffix string) ([]byte, error)
	// DIDStateGetMany returns the stored states of those of suffixes that have one.
	DIDStateGetMany(ctx context.Context, suffixes []string) (map[string][]byte, error)
	// DIDStateInsertMany stores the states of DIDs that have none, in suffix order, and returns
	// the suffixes whose state it stored; a DID that has one keeps it. On PostgreSQL a DID
	// whose state another transaction is inserting waits for that transaction to end.
	DIDStateInsertMany(ctx context.Context, states []DIDState) (map[string]bool, error)
	// DIDStateLockMany is DIDStateGetMany for a transaction that will replace the states it
	// reads: on PostgreSQL it locks their rows, in suffix order, until the transaction ends,
	// waiting for another transaction that holds one, and returns what it committed.
	DIDStateLockMany(ctx context.Context, suffixes []string) (map[string][]byte, error)
	// DIDStatePutMany stores states, replacing those that exist.
	DIDStatePutMany(ctx context.Context, states []DIDState) error
}
