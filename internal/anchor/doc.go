// Package anchor records anchors: for each Sidetree batch the batch writer built, the Writer
// assembles the anchor record (anchor string, core index CID, the previous anchor of every DID
// in the batch, time) and hands it to the configured Backend inside the batch writer's
// transaction — the same transaction that acks the batch's operations.
//
// Backends decide how an anchor becomes final:
//
//	local    the domain signs the record with its Ed25519 key; the anchor is complete at once.
//	ledger   the anchor waits (pending) for a ledger to commit it; a submitter delivers it and a
//	         status poller completes or fails it (package submitter).
//	witness  the anchor waits (pending) while package witness offers the record to witness
//	         domains under the witness policy; it completes once their proofs satisfy it.
//
// In the did:orb profile (Config.WholeSeconds) the record's time, which the anchor credential
// carries, comes from the anchor clock in the store, so that no two anchors of the domain fall
// in one whole second (clock.go).
//
// An anchor is observed (its operations indexed per DID) only once complete. An anchor that
// fails gives its operations back to the queue (the durability chain, link 4).
package anchor
