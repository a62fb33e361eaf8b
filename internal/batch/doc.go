// Package batch is the batch writer: it cuts operations from the operation queue into Sidetree
// batches, builds the batch files, stores them in CAS and records the anchor — acking the
// operations in the same transaction (the durability chain, link 3).
//
// A batch is cut when MaxOperationCount operations are available or when the oldest available
// operation is Timeout old (measured from that operation, not by a fixed ticker as in Orb), and
// when the writer stops (flush). A batch holds one operation per DID; a file over its size cap
// makes the writer cut a smaller batch and leave the rest queued.
//
// Failure handling: any error before the anchor transaction commits (building, CAS, the
// transaction itself) Nacks the batch, so its operations are retried after a backoff and parked
// after the configured number of attempts. An operation that cannot be parsed any more is
// parked at once. A crash at any point before the commit leaves the operations queued; after
// it, the anchor is recorded.
package batch
