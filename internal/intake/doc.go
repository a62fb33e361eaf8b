// Package intake accepts operation requests: it validates each one statelessly (Sidetree
// rules, signature, delta hash), refuses a second operation for a DID that already has one
// pending, checks it against the DID's current anchored state and against what one DID may grow
// to (sidetree.Profile's operation and document-size limits), and queues it durably. Only
// then does the caller answer 200.
//
// "Pending" covers an operation from the moment intake reserves its DID until the anchor that
// carries it is observed (or the operation is parked): an operation validated while another for
// the same DID is queued or anchored-but-not-yet-indexed would be checked against a state that
// is about to change. For the same reason the DID is reserved before its state is read: the
// reservation of the previous operation ends in (cluster) or after (embedded) the commit of its
// index rows, so a read made under the new reservation sees them, while a read made before it
// may predate them.
package intake
