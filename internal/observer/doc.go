// Package observer turns completed anchors into per-DID operation history and resolves DIDs
// from it.
//
// The Observer reads each completed anchor's batch files from CAS with the Sidetree batch
// reader and, in one transaction, marks the anchor observed and adds its operations to
// did_operations. The mark is conditional (observed_at IS NULL), so an anchor is indexed exactly
// once even when several observers race or one crashes between reading and committing: the
// mark comes first, so the loser waits for the winner's commit and then rolls back without
// having written anything, and a crash before the commit leaves the anchor to be observed again.
// Embedded, a large anchor's rows are committed in slices before that transaction
// (Config.IndexTxRows), so intake's commits are not held up behind all of them; rows are keyed by
// (anchor, position) and inserted only if absent, so an anchor cut between slices is indexed
// again from its start without duplicates.
//
// Another domain's anchor reaches the index through ObserveForeign, which records the anchor
// (its origin and hashlink, completed and observed) and indexes the operations its caller keeps
// in one transaction; the hashlink's uniqueness makes a second delivery of it a no-op. The
// Observer stays the only writer of the per-DID index, so the known-suffix filter and the
// resolver's cache see these writes as they see their own.
//
// The index names each operation by where it was anchored (anchor, position), its DID and its
// type, and keeps each DID's compact state; it keeps no copy of the operation. Batches rebuilds
// the requests from the anchors' batch files in CAS, for the paths that read a DID's history
// (versions, the explorer, did:orb's operation lists, a state computed from history).
//
// The Resolver resolves a DID from its stored state, and its versions by running the Sidetree
// resolution state machine over its indexed operations, in anchor order (anchor sequence, then
// position in the batch). Embedded, where the Observer is the
// index's only writer, it trusts the states it cached; in a cluster it reads the rows on every
// call, and the concurrent calls' reads go to the store together, one query per round (group).
package observer
