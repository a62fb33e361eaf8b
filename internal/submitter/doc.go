// Package submitter delivers ledger anchors: the Submitter claims the unsubmitted rows of
// batches (written by the ledger anchoring backend, anchor.Ledger) and submits them to a ledger
// through a ledger.Client; the Poller asks the ledger what became of submitted batches and
// completes or fails their anchors. It implements Hyperledger Grid's batch submitter without
// Grid's losses.
//
// A batch row moves like this (store.LedgerExecutor holds the statements):
//
//	unsubmitted ─claim──────────────────────────▶ claimed
//	claimed ─2xx, or the ledger already holds it─▶ submitted, dlt_status PENDING
//	claimed ─400, 404───────────────────────────▶ failed "Bad Request" | "Not Found"; anchor failed, operations requeued
//	claimed ─408, 429, 5xx, no answer───────────▶ unsubmitted (relinquished: attempts+1, due after backoff)
//	claimed ─the last attempt fails─────────────▶ failed "Parked" + dead letter; anchor failed, operations requeued
//	claimed ─the claim expires──────────────────▶ claimable (the next claim counts an attempt and asks the ledger first)
//	submitted ─poll: COMMITTED──────────────────▶ COMMITTED; anchor completed (the observer indexes it)
//	submitted ─poll: INVALID────────────────────▶ INVALID; anchor failed, operations requeued
//	submitted ─poll: UNKNOWN past the grace, twice▶ unsubmitted, due now (the same signed bytes go again)
//
// Invariants:
//
//   - A claim is taken in one statement, from the database clock (claim_expires = now + TTL),
//     with FOR UPDATE SKIP LOCKED on PostgreSQL; two submitters never hold one batch.
//   - Every write about a claimed batch is fenced by the claim's owner and term in the same
//     statement; a submitter whose claim was taken over writes nothing (store.ErrLeaseLost).
//   - No database transaction is open during a ledger request. A round makes no ledger request
//     later than ClaimTTL × 3/4 after it sent its claim, so a live submitter's claims do not
//     expire under it; a dead submitter's claims expire and are taken over.
//   - Rounds overlap: Run claims again as soon as half of ClaimLimit is free, and all rounds
//     share one bound of Concurrency requests, so a request that hangs until its timeout holds
//     one slot rather than stalling the others.
//   - A batch the ledger may hold although no acceptance was recorded (no answer; 503
//     "Validator Timed Out"; a claim that expired mid-flight; an acceptance that could not be
//     written) is marked MaybeSubmitted, and the ledger is asked before it is sent again, so a
//     killed submitter causes no duplicate submission.
//   - An anchor fails in the transaction that records why, and RequeueFunc gives its
//     operations back to the queue in that same transaction (durability link 4). A batch whose
//     attempts run out is parked in dead_letters with its reason and history (link 5).
//   - The Poller's writes are compare-and-set on dlt_status, and anchors move only from
//     pending, so an anchor completes or fails, and its operations are requeued, at most once.
//   - Small outcome writes of concurrent settles (accepted, relinquished, status moves) share
//     one transaction (groupTx), so n outcomes cost one commit; committed batches are settled
//     in bulk. A write that fails alone is retried alone and cannot fail its neighbours.
//
// Claims expired without an outcome count as attempts, so a batch that kills its submitters
// is eventually parked rather than retried forever.
package submitter
