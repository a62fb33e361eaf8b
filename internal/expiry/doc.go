// Package expiry is the data-expiry task: every data-expiry-check-interval, on the one instance
// that holds its taskmgr permit, it removes the expired rows of the tables registered with it,
// in bounded batches.
//
// Durability rule: an op_queue row is an accepted operation that was never anchored, so an
// expired one is parked in dead_letters (kind operation, reason expired, the request as
// payload, attempts and history copied) in the transaction that deletes it, never just deleted
// (the durability chain, link 5). op_queue is always registered. Other tables are
// registered with Disposable only when their rows may be lost without a trace; the tables of
// the durable write path are refused (store.CheckExpiryTable).
//
// Tables and columns come from code, never from input: a registration names a table and its
// expiry column (a time on the database clock), the backend checks both are plain identifiers,
// and compares the column with the database clock.
//
// The task itself is run by taskmgr (the daemon registers Expire under TaskID); this package
// does not import it, and needs only its Fence.
//
// A run goes through the tables in registration order. For each it deletes (or parks) up to
// BatchSize rows per transaction, again while a batch was full, at most MaxBatches times; what
// is left waits for the next run. Each transaction is fenced by the run's permit term
// (taskmgr.Manager.Fence), so a run whose permit was taken over stops at its next batch. An
// error on one table is logged and counted and does not stop the others.
//
// This package does not delete parked items (dead letters wait for an operator) and does not
// tell an instance that one of its in-memory operations was parked: the owner learns it when
// its Ack finds the row gone.
package expiry
