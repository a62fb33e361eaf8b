// Package federation is a domain's ActivityPub service: its Service actor and discovery
// documents, the durable outbox and the deliverers that empty it, the durable inbox and the
// processors that run its handlers, the relationships (followers, following, witnesses,
// witnessing) with their Follow/Invite/Accept/Reject/Undo handlers and accept lists, the
// activity sync task, and the admin API over them. Requests to other domains go through package
// peer; what an anchor's Create or Announce means is not decided here (handlers registered by
// the anchor federation do that).
//
// # Durability
//
//   - Post returns once the activity and one delivery row per recipient have committed
//     (PostTx: with the caller's transaction; Prepare, then Outgoing.PostTx: laid out before
//     that transaction). Deliverers claim due deliveries with a lease, POST them signed, and
//     settle each under its claim: delivered, retried on the redelivery schedule, or, after
//     the last attempt, parked with a dead letter of kind activity written in the same
//     transaction. An operator's retry of that dead letter re-arms the delivery in the
//     transaction that deletes the dead letter.
//   - POST /inbox answers 200 only once the activity's row has committed; a second copy of an
//     activity id changes nothing. Processors claim queued rows and run the handler of the
//     type; a failing handler is retried, then parked (kind activity), never marked done, and
//     never blocks the rows behind it. Handlers MUST be idempotent: a row may run again after
//     a claim expired (a crash mid-handler).
//   - Rows are the truth; wake-ups (a channel in this process, the activity topics between the
//     instances of a cluster) only make the loops look sooner than their poll.
//
// # Inbox checks, in order
//
//  1. Body cap (inbox.go): over MaxInboxBytes, or over its type's cap (the type read from the
//     top-level member alone) → 413, before any signature work.
//  2. HTTP signature (package httpsig): missing, malformed, stale, replayed, by an unknown
//     key or not verifying → 401; the signer's key could not be fetched → 503.
//  3. Quota: the signer's and its domain's token buckets → 429 with Retry-After.
//  4. The activity parses within the activity limits (and its type's cap) → 400 (413).
//  5. The activity's actor must own the signing key → 401.
//  6. Its id is on its actor's host (scheme and host) → 400 otherwise: activities are known by
//     id, and an id on another domain's host would let one domain take another's (the activity
//     sync skips such items too).
//  7. Its handler's Authorize: 403 for an actor that may not do this (only Follow and Invite
//     are taken from a domain we have nothing with), 400 for a malformed request (a Follow of
//     someone else), 202 and nothing stored for a stranger's Like.
//
// Every refusal's body is {code, message} in words of this package; the error goes to the
// debug log. Handled rows are deleted InboxKeep after they were handled.
//
// # Relationships
//
// following/witness are ours: pending from our Follow/Invite until the peer's Accept (which must
// embed that activity, or an earlier one of ours to the same peer, found in our outbox) or
// Reject (of that very activity). follower/witnessing are the peers':
// accepted by --follow-auth-policy / --invite-witness-auth-policy (accept-all, or accept-list
// with the accept lists), ended by the peer's Undo, which must come from the actor of the
// activity it undoes. A repeated Follow or Invite is answered at most once per AnswerInterval.
//
// # Activity sync
//
// Positions are stored per source collection as (page IRI, index in page). anchord's own
// outbox pages by a public position that never changes, so such a position stays valid; Orb's
// offset pages may shift, which costs re-reads, never losses, since queueing is idempotent.
package federation
