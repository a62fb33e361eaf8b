// Package opqueue is the durable operation queue between intake and the batch writer, with
// Orb's interface (Add, Remove(n) with Ack and Nack, Peek, Len) and without Orb's losses.
//
// Durability (the durability chain, links 1–3 and 5):
//   - Add returns only after the operation's op_queue row is committed. Concurrent Adds are
//     group-committed: the committer loop (Run) writes everything that arrived while the previous
//     commit was in flight in one transaction, so the fsync rate stays low under load.
//   - Remove hands out a Batch. Its operations stay in op_queue until Batch.Ack deletes them
//     inside the transaction that records the anchor; if that transaction does not commit, the
//     operations are still queued.
//   - Batch.Nack records the failure in the operation's row and makes it available again after
//     Backoff(attempts); after MaxAttempts failed batches an operation is parked in dead_letters
//     with its history, in the same transaction that deletes its row. Nothing is dropped, and in
//     a cluster nothing waits only inside the broker: the delay lives in the row.
//
// Rows are owned by an instance (instance_id). Ack and Nack are fenced by that owner: if the rows
// were handed to another instance meanwhile, Ack fails with store.ErrLeaseLost and the anchor
// transaction rolls back.
//
// The in-memory queue mirrors this instance's rows: Load fills it at start, Add appends after
// commit, Remove moves operations out (in flight), and Ack/Nack/Return settle them.
package opqueue
