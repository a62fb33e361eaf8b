// Package relay carries anchors between domains that follow each other: it publishes each
// anchor this domain completes to its followers, and it observes the anchors of the domains
// this one follows, as Orb's Activity Anchors do. ActivityPub itself — signatures, the durable
// inbox and outbox, relationships, the activity sync — is another room's; relay gets what it
// needs of it as functions (post in a transaction, signed GET, "do we follow this actor").
//
// # Publishing (Publisher)
//
// This domain's anchors are published in sequence order, each once. An anchor's linkset names,
// for every DID it carries, the DID's previous anchor by hashlink, so an anchor can only be
// published once every earlier anchor of ours is: the Publisher takes the lowest anchor of ours
// that is neither published nor failed, waits while it is pending or not yet indexed, builds
// its anchor link (original: the batch's DIDs with their previous anchors; related: the core
// index and the parents; replies: the anchor credential signed by the domain key on its did:web)
// and, in one transaction, marks the anchor published under its hashlink, stores the linkset in
// CAS and posts the Create to the outbox. The outbox lays the Create out before that
// transaction (PrepareFunc), so that the transaction holds SQLite's write lock for the writes
// and lookups only. A crash anywhere before the commit leaves the anchor unpublished and it is
// published at the next turn; the conditional mark makes a second publisher's commit fail
// instead of posting twice.
//
// # Observing (Receiver)
//
// A Create or Announce of an AnchorEvent is handled only from a domain this one follows. For
// each anchor event: the url must be the hash of the embedded linkset; the link's anchor must
// be the hash of its original content; for a Create the link's author must be the sender; the
// anchor credential's subject must name the link, and one of its proofs must verify with a key
// of the author's did:web, resolved from the author's own host (over http when the author's IRI
// is http, as for loopback test domains and Orb's dev mode). An anchor already recorded (by
// hashlink) is done.
//
// Parents first: every previous anchor the link names must be applied here. If one is not, the
// anchor is recorded as waiting for it and nothing else happens; each time an anchor is applied
// the waiting anchors whose parent is now here are tried again, for at most MaxCascade rounds,
// and a sweep every PollInterval finds the rest. At most MaxWaitingPerOrigin anchors of one
// origin wait; beyond that the activity is retried later by the inbox.
//
// The batch files are read with the Sidetree batch reader, each file fetched with its kind's
// cap: from the local CAS, else the origin's /cas/<cid> (the origin's host only), else the
// sender's, else the CAS mirror; a file is checked against its CID, and the core index against
// the link's hashlink, before anything is stored. The anchor is then indexed through
// observer.ObserveForeign, in one transaction that also stores the fetched files and, for a
// live Create, posts the Announce to our followers (excluding the sender): the previous-anchor
// rule is checked there, against the index as that transaction sees it — an operation whose
// previous anchor is not its DID's latest anchor here (or, for a create, whose DID already has
// one) is not indexed, and is counted and logged.
//
// # Errors
//
// Errors wrapping ErrInvalid are the peer's fault and permanent (the inbox parks the activity);
// ErrNotFollowed refuses an anchor from a domain this one does not follow; anything else (a
// peer or a did:web host that does not answer, the database) is transient and retried.
package relay
