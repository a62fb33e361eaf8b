// Package store is the database contract: the Store and Executor interfaces every backend
// implements, the parameter and row types of their methods, the sentinel errors, and the
// migration-file model. Backends (pgstore for PostgreSQL, sqlitestore for the embedded SQLite
// database) own their SQL and migrations; storetest holds the conformance suite both run.
//
// Rules every backend MUST follow:
//   - Every time comparison that coordinates instances uses the database clock (Now), never the
//     host clock.
//   - InTx runs fn in one transaction and commits only if fn returns nil; the Executor passed to
//     fn MUST NOT be used after fn returns. InTx MUST pass fn a context from BeginCommitHooks
//     and run the hooks after a successful commit, never after a rollback (OnCommit).
//   - Errors are wrapped with the operation name and map engine errors to ErrNotFound,
//     ErrConflict or ErrLeaseLost where those apply.
package store

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors returned (wrapped) by backends.
var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a uniqueness rule was violated.
	ErrConflict = errors.New("conflict")
	// ErrLeaseLost: a fenced write found that the caller no longer holds the lease, claim or task
	// entry it was written under; the write did not happen.
	ErrLeaseLost = errors.New("lease lost")
)

// Store is a database: an Executor outside any transaction, plus transactions and lifecycle.
type Store interface {
	Executor
	// InTx runs fn inside one transaction, committing if fn returns nil and rolling back
	// otherwise.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Executor) error) error
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Backend names the implementation: "sqlite" or "postgres".
	Backend() string
	// Close releases every connection.
	Close()
}

// Executor holds the queries; it runs either on the pool or inside a transaction. Queries of
// self-contained subsystems are grouped in embedded interfaces declared in their own files.
type Executor interface {
	TaskExecutor
	LedgerExecutor
	PendingExecutor
	CASPinExecutor
	AnchorLinkExecutor
	AnchorClockExecutor
	ActivityExecutor
	LogCheckpointExecutor
	CosignedCheckpointExecutor
	WitnessExecutor
	DIDStateExecutor

	// Now returns the database clock.
	Now(ctx context.Context) (time.Time, error)
	// MigrationList returns the applied migrations, oldest first.
	MigrationList(ctx context.Context) ([]AppliedMigration, error)

	// SettingGet returns a named setting, or ErrNotFound.
	SettingGet(ctx context.Context, name string) ([]byte, error)
	// SettingInsert stores a named setting once; ErrConflict if it exists. Callers that create a
	// value at first start insert and, on ErrConflict, read the winner's value.
	SettingInsert(ctx context.Context, name string, value []byte) error
	// SettingPut stores a named setting, replacing its value if it exists: for settings an
	// operator changes (the witness policy), where the last writer wins. A nil value is stored
	// as the empty value.
	SettingPut(ctx context.Context, name string, value []byte) error

	// OpQueueUpsertMany queues operations and returns their ids in input order. An OpID that is
	// already queued is not duplicated: the row is handed to the inserting instance (new owner,
	// lifespan and availability), which is what a redelivered message must do.
	OpQueueUpsertMany(ctx context.Context, ops []OpQueueInsertParams) ([]int64, error)
	// OpQueueList returns an instance's queued operations with id > AfterID, in id order.
	OpQueueList(ctx context.Context, p OpQueueListParams) ([]QueuedOp, error)
	// OpQueueDeleteMany deletes the listed operations still owned by p.InstanceID and returns
	// how many it deleted.
	OpQueueDeleteMany(ctx context.Context, p OpQueueDeleteParams) (int64, error)
	// OpQueueOwnedIDs returns which of p.IDs are still queued and owned by p.InstanceID.
	OpQueueOwnedIDs(ctx context.Context, p OpQueueDeleteParams) (map[int64]bool, error)
	// OpQueueRetry records a failed attempt; ErrLeaseLost if the row is gone or owned by
	// another instance.
	OpQueueRetry(ctx context.Context, p OpQueueRetryParams) error

	// OpQueueTaskTouch creates or refreshes an instance's task entry (updated_at = now): what an
	// instance does once, at start.
	OpQueueTaskTouch(ctx context.Context, instanceID string) error
	// OpQueueTaskRefresh refreshes an existing entry; ErrLeaseLost if it is gone (the instance
	// was taken over and must stop).
	OpQueueTaskRefresh(ctx context.Context, instanceID string) error
	// OpQueueTaskDelete removes an instance's task entry (graceful stop).
	OpQueueTaskDelete(ctx context.Context, instanceID string) error
	// OpQueueTaskCheck fails with ErrLeaseLost unless the instance's task entry exists. Inside a
	// transaction on PostgreSQL it holds a share lock on the entry until commit, so a take-over
	// cannot delete it in between: this is how an Ack is fenced.
	OpQueueTaskCheck(ctx context.Context, instanceID string) error
	// OpQueueTaskTakeOver deletes the entries not refreshed within expiration (database clock),
	// except except's, and returns their instance ids. Once it commits, those instances' Acks fail.
	OpQueueTaskTakeOver(ctx context.Context, expiration time.Duration, except string) ([]string, error)
	// OpQueueOrphans returns up to limit queued operations whose owner has no task entry,
	// oldest first, excluding the given owner (the embedded instance id, which has no entry).
	OpQueueOrphans(ctx context.Context, limit int, exceptOwner string) ([]QueuedOp, error)

	// AnchoredOpsInsert records, for keep, that the operations were anchored by anchor seq;
	// ErrConflict if any of them already was (the caller's transaction must then roll back).
	AnchoredOpsInsert(ctx context.Context, seq int64, opIDs []string, keep time.Duration) error
	// AnchoredOpsDeleteByAnchor forgets those of opIDs recorded for anchor seq (it failed, and
	// its operations go back to the queue); one recorded for another anchor stays. The caller
	// names the operations, read from the anchor's batch files, so that the rows are found by
	// their key: nothing leads an index with the anchor, and a table of every operation of the
	// last day is not scanned inside the transaction that fails an anchor.
	AnchoredOpsDeleteByAnchor(ctx context.Context, seq int64, opIDs []string) error
	// AnchoredOpsFilter returns which of opIDs are recorded as anchored.
	AnchoredOpsFilter(ctx context.Context, opIDs []string) (map[string]bool, error)

	// DeadLetterInsert parks an item and returns its id.
	DeadLetterInsert(ctx context.Context, d DeadLetter) (int64, error)
	// DeadLetterList pages through parked items in id order.
	DeadLetterList(ctx context.Context, p DeadLetterListParams) ([]DeadLetter, error)
	// DeadLetterGet returns one parked item, or ErrNotFound.
	DeadLetterGet(ctx context.Context, id int64) (DeadLetter, error)
	// DeadLetterDelete removes one parked item; ErrNotFound if it does not exist.
	DeadLetterDelete(ctx context.Context, id int64) error
	// DeadLetterCountByKind counts the parked items of each kind; kinds with none are absent.
	DeadLetterCountByKind(ctx context.Context) (map[string]int64, error)

	// CASPut stores content under its CID; storing existing content is a no-op.
	CASPut(ctx context.Context, cid string, data []byte) error
	// CASGet returns the content of a CID, or ErrNotFound.
	CASGet(ctx context.Context, cid string) ([]byte, error)
	// CASGetBySHA256 returns content stored by CASPut whose sha2-256 digest is digest, or
	// ErrNotFound (content stored before the digest was kept is found by CID only).
	CASGetBySHA256(ctx context.Context, digest []byte) ([]byte, error)
	// CASExistsBySHA256 reports whether content CASGetBySHA256 would return is stored, without
	// reading it: a caller that holds the bytes it stored learns that they are there for the
	// price of an index lookup, where a read of an anchor's linkset copies half a megabyte.
	CASExistsBySHA256(ctx context.Context, digest []byte) (bool, error)

	// AnchorInsert records an anchor and returns it with its sequence number. The same anchor
	// string may be recorded twice (a batch of exactly the same operations); each is its own
	// anchor, as two identical Sidetree transactions are.
	AnchorInsert(ctx context.Context, p AnchorInsertParams) (Anchor, error)
	// AnchorGet returns an anchor by sequence number, or ErrNotFound.
	AnchorGet(ctx context.Context, seq int64) (Anchor, error)
	// AnchorList pages through anchors in sequence order.
	AnchorList(ctx context.Context, p AnchorListParams) ([]Anchor, error)
	// AnchorListLatest pages backwards through anchors: newest (highest sequence number) first,
	// below p.BeforeSeq when it is positive.
	AnchorListLatest(ctx context.Context, p AnchorListLatestParams) ([]Anchor, error)
	// AnchorNextToObserve returns the completed, unobserved anchor with the lowest sequence
	// number, or ErrNotFound. Inside a transaction on PostgreSQL the row is locked and rows
	// locked by other transactions are skipped, so concurrent observers never take the same one.
	AnchorNextToObserve(ctx context.Context) (Anchor, error)
	// AnchorMarkObserved sets observed_at on a completed, unobserved anchor; ErrNotFound if it
	// is not one (observed already, or not completed), so an anchor is observed exactly once.
	// A mark waits for another transaction's uncommitted mark of the same anchor: ErrNotFound
	// once that commits, marked if it rolls back (the observer claims an anchor with it).
	AnchorMarkObserved(ctx context.Context, seq int64) error

	// DIDOperationInsertMany adds anchored operations to the per-DID index, without their
	// requests (DIDOperation.Request); rows already present (same suffix, anchor and index) are
	// left alone. The rows of a DID are found by the positions its state names (DIDState): the
	// observer stores the DID's state with the new positions in the same transaction.
	DIDOperationInsertMany(ctx context.Context, ops []DIDOperation) error
	// DIDOperationList returns a DID's anchored operations in anchor order, with their anchors'
	// origin and anchor string, and the request of rows indexed while the index still kept it:
	// the rows its stored state names. A backend with an index by suffix lists every row of the
	// suffix instead, so rows a transaction inserted before it stored the DID's state may or may
	// not be listed inside it; such a caller adds its own (observer.replayState).
	DIDOperationList(ctx context.Context, suffix string) ([]DIDOperation, error)
	// DIDOperationLists is DIDOperationList for several DIDs at once: the operations of each
	// suffix that has any, in anchor order; a suffix with none is absent from the map.
	DIDOperationLists(ctx context.Context, suffixes []string) (map[string][]DIDOperation, error)
	// DIDSuffixList pages through the suffixes of the per-DID index: up to limit of them after
	// the cursor after ("" to start), and the cursor to continue from, which the caller keeps
	// and never reads (it survives a restart of the same database); none when none are left.
	// Each suffix comes once, in suffix order, and the cursor is the last suffix listed.
	DIDSuffixList(ctx context.Context, after string, limit int) (suffixes []string, next string, err error)
	// DIDLastAnchors returns, for each suffix that has anchored operations, the sequence number
	// of its latest anchor.
	DIDLastAnchors(ctx context.Context, suffixes []string) (map[string]int64, error)
}

// AppliedMigration is a row of the schema_migrations table.
type AppliedMigration struct {
	Version   int
	Name      string
	AppliedAt time.Time
}
