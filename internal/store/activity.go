package store

import (
	"context"
	"time"
)

// ActivityExecutor holds the queries of the ActivityPub service: the outbox and one delivery per
// recipient, the inbox, the cache of other domains' actor documents, relationships, accept lists
// and the activity sync's positions.
//
// Deliveries and inbox rows are work items claimed like ledger batches:
//
//	delivery  pending ─claim─▶ pending, claimed ─complete─▶ delivered
//	                                            ─retry────▶ pending, due after a backoff
//	                                            ─park─────▶ parked ─rearm─▶ pending, due now
//	inbox     queued  ─claim─▶ queued, claimed  ─complete─▶ done
//	                                            ─retry────▶ queued, due after a backoff
//	                                            ─park─────▶ parked ─rearm─▶ queued, due now
//
// A claim sets claim_owner, bumps claim_term and sets claim_expires = database now + TTL, in one
// conditional statement (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: the single writer), so two
// claimers never hold the same row. Every outcome is fenced by (owner, term) in the statement
// itself and fails with ErrLeaseLost when the claim was taken over; a claim that expired without
// an outcome counts as a failed attempt at the next claim, with a history line. Every time
// comparison uses the database clock.
type ActivityExecutor interface {
	// ActivityOutboxInsert stores an activity of our outbox and one pending delivery, due now, per
	// recipient (duplicates collapse). A public activity gets the next public position, so that
	// the public outbox pages by a number that never changes: positions are handed out in commit
	// order (PostgreSQL takes a transaction-scoped lock for it, held until the caller's
	// transaction ends). ErrConflict if the activity id is already in the outbox.
	ActivityOutboxInsert(ctx context.Context, p ActivityOutboxInsertParams) (OutboxActivity, error)
	// ActivityOutboxGet returns an outbox activity by its id, or ErrNotFound.
	ActivityOutboxGet(ctx context.Context, activityID string) (OutboxActivity, error)
	// ActivityOutboxListPublic returns the public activities whose position is in
	// (p.After, p.After+p.Limit], in position order.
	ActivityOutboxListPublic(ctx context.Context, p ActivityPageParams) ([]OutboxActivity, error)
	// ActivityOutboxCountPublic returns the number of public activities (the highest position).
	ActivityOutboxCountPublic(ctx context.Context) (int64, error)

	// ActivityDeliveryClaim claims up to p.Limit due pending deliveries, oldest due first, with
	// their activity's body.
	ActivityDeliveryClaim(ctx context.Context, p ActivityClaimParams) ([]ActivityDelivery, error)
	// ActivityDeliveryComplete marks a claimed delivery delivered; it becomes disposable at
	// database now + p.Keep (expires_at). ErrLeaseLost unless the claim still holds it.
	ActivityDeliveryComplete(ctx context.Context, p ActivityCompleteParams) error
	// ActivityDeliveryRetry counts a failed attempt and makes the delivery due again at database
	// now + p.Backoff. ErrLeaseLost unless the claim still holds it.
	ActivityDeliveryRetry(ctx context.Context, p ActivityRetryParams) error
	// ActivityDeliveryPark counts a failed attempt and parks the delivery. The caller inserts the
	// dead letter in the same transaction. ErrLeaseLost unless the claim still holds it.
	ActivityDeliveryPark(ctx context.Context, p ActivityRetryParams) error
	// ActivityDeliveryRearm makes a parked delivery pending and due now with its attempts reset
	// (an operator's retry); ErrNotFound unless the delivery exists and is parked.
	ActivityDeliveryRearm(ctx context.Context, id int64) error
	// ActivityDeliveryGet returns a delivery (without the body), or ErrNotFound.
	ActivityDeliveryGet(ctx context.Context, id int64) (ActivityDelivery, error)
	// ActivityDeliveryListByActivity returns the deliveries of an outbox activity in id order.
	ActivityDeliveryListByActivity(ctx context.Context, activityID string) ([]ActivityDelivery, error)
	// ActivityDeliveryLatest returns the most recent delivery to recipient (without the body),
	// or ErrNotFound when there is none (delivered deliveries expire).
	ActivityDeliveryLatest(ctx context.Context, recipient string) (ActivityDelivery, error)

	// ActivityInboxInsert stores a received activity, queued and due now, and reports whether it
	// inserted it: an activity id already in the inbox is left alone (false, nil), whatever its
	// status.
	ActivityInboxInsert(ctx context.Context, p ActivityInboxInsertParams) (int64, bool, error)
	// ActivityInboxClaim claims up to p.Limit due queued inbox rows, oldest due first.
	ActivityInboxClaim(ctx context.Context, p ActivityClaimParams) ([]InboxActivity, error)
	// ActivityInboxComplete marks a claimed row done. ErrLeaseLost unless the claim holds it. A
	// positive p.Keep makes the done row disposable at database now + p.Keep (expires_at), for
	// the data-expiry task; zero keeps it. Queued and parked rows never expire.
	ActivityInboxComplete(ctx context.Context, p ActivityCompleteParams) error
	// ActivityInboxRetry counts a failed attempt and makes the row due again at database now +
	// p.Backoff. ErrLeaseLost unless the claim still holds it.
	ActivityInboxRetry(ctx context.Context, p ActivityRetryParams) error
	// ActivityInboxPark counts a failed attempt and parks the row; the caller inserts the dead
	// letter in the same transaction. ErrLeaseLost unless the claim still holds it.
	ActivityInboxPark(ctx context.Context, p ActivityRetryParams) error
	// ActivityInboxRearm queues a parked row again, due now, attempts reset; ErrNotFound unless
	// it exists and is parked.
	ActivityInboxRearm(ctx context.Context, seq int64) error
	// ActivityInboxGet returns an inbox row, or ErrNotFound.
	ActivityInboxGet(ctx context.Context, seq int64) (InboxActivity, error)
	// ActivityInboxGetByActivity returns the inbox row of an activity id, or ErrNotFound.
	ActivityInboxGetByActivity(ctx context.Context, activityID string) (InboxActivity, error)
	// ActivityInboxList returns the inbox rows whose seq is in (p.After, p.After+p.Limit], in
	// seq order: the inbox collection's pages. The collection pages by seq, a position that is
	// never handed out twice, so a reader's position stays valid while expiry deletes old rows
	// (a page may then hold fewer than p.Limit rows, or none).
	ActivityInboxList(ctx context.Context, p ActivityPageParams) ([]InboxActivity, error)
	// ActivityInboxLastSeq returns the highest seq of the inbox's rows, 0 when it has none: the
	// inbox collection's size, counted in positions.
	ActivityInboxLastSeq(ctx context.Context) (int64, error)
	// ActivityReleaseClaims releases every claim owner holds on inbox rows and deliveries and
	// returns how many it released: a restarted embedded instance (same owner) takes back what
	// its previous life held, instead of waiting out the claims' TTL.
	ActivityReleaseClaims(ctx context.Context, owner string) (int64, error)

	// ActivityCounts returns the gauges of the service: work items by status and relationships.
	ActivityCounts(ctx context.Context) (ActivityCountsResult, error)

	// ActorCacheUpsert stores or replaces a fetched actor document.
	ActorCacheUpsert(ctx context.Context, a CachedActor) error
	// ActorCacheGet returns a cached actor by IRI, or ErrNotFound.
	ActorCacheGet(ctx context.Context, iri string) (CachedActor, error)

	// RelationshipUpsert creates or replaces the relationship (p.Kind, p.Actor).
	RelationshipUpsert(ctx context.Context, p RelationshipUpsertParams) error
	// RelationshipAnswer records our answer p.Status to a peer's request p.ActivityID (its Follow
	// or Invite): it creates or replaces (p.Kind, p.Actor) with that status and activity id, and
	// reports whether the answer is to be posted. It is not when the relationship already had
	// p.Status and was answered less than p.Interval ago (database clock): then only the activity
	// id is replaced, so that the peer's Undo of its latest request still matches. When it
	// reports true, the answer time is now. Concurrent calls for one relationship report true
	// at most once per interval once the relationship exists.
	RelationshipAnswer(ctx context.Context, p RelationshipAnswerParams) (bool, error)
	// RelationshipSetStatus moves (kind, actor) to p.Status if its activity id is p.ActivityID
	// (the Follow or Invite being answered) and returns it; ErrNotFound otherwise.
	RelationshipSetStatus(ctx context.Context, p RelationshipSetStatusParams) (Relationship, error)
	// RelationshipGet returns a relationship, or ErrNotFound.
	RelationshipGet(ctx context.Context, kind, actor string) (Relationship, error)
	// RelationshipDelete removes a relationship; ErrNotFound if there is none.
	RelationshipDelete(ctx context.Context, kind, actor string) error
	// RelationshipList pages through the relationships of a kind (with p.Status, if set) in the
	// order they were created, skipping the first p.Offset.
	RelationshipList(ctx context.Context, p RelationshipListParams) ([]Relationship, error)
	// RelationshipCount counts the relationships of a kind with a status (every status if empty).
	RelationshipCount(ctx context.Context, kind, status string) (int64, error)

	// AcceptListInsert adds an actor to an accept list and reports whether it was new.
	AcceptListInsert(ctx context.Context, listType, actor string) (bool, error)
	// AcceptListDelete removes an actor from an accept list and reports whether it was there.
	AcceptListDelete(ctx context.Context, listType, actor string) (bool, error)
	// AcceptListContains reports whether an actor is on an accept list.
	AcceptListContains(ctx context.Context, listType, actor string) (bool, error)
	// AcceptListList returns an accept list (every type if listType is empty), by type, then actor.
	AcceptListList(ctx context.Context, listType string) ([]AcceptListEntry, error)

	// SyncPositionGet returns the stored position of a sync source, or ErrNotFound.
	SyncPositionGet(ctx context.Context, source string) (string, error)
	// SyncPositionSet stores the position of a sync source.
	SyncPositionSet(ctx context.Context, source, position string) error
}

// DeadLetterActivity is the dead-letter kind of a parked delivery or inbox activity; the
// federation service names which in its Ref.
const DeadLetterActivity = "activity"

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryParked    = "parked"
)

// Inbox statuses.
const (
	InboxQueued = "queued"
	InboxDone   = "done"
	InboxParked = "parked"
)

// Inbox sources.
const (
	InboxSourceLive = "live"
	InboxSourceSync = "sync"
)

// Relationship kinds: who follows or witnesses whom, from our side.
const (
	// RelationshipFollower: the actor follows us.
	RelationshipFollower = "follower"
	// RelationshipFollowing: we follow the actor.
	RelationshipFollowing = "following"
	// RelationshipWitness: the actor witnesses our anchors (we invited it).
	RelationshipWitness = "witness"
	// RelationshipWitnessing: we witness the actor's anchors (it invited us).
	RelationshipWitnessing = "witnessing"
)

// Relationship statuses.
const (
	RelationshipPending  = "pending"
	RelationshipAccepted = "accepted"
	RelationshipRejected = "rejected"
)

// Accept-list types, Orb's names.
const (
	AcceptListFollow        = "follow"
	AcceptListInviteWitness = "invite-witness"
)

// OutboxActivity is a row of ap_outbox.
type OutboxActivity struct {
	Seq        int64
	ActivityID string
	Type       string
	// Body is the activity as stored, which the store does not look into: an anchor's Create
	// may be stored without the linkset it embeds (package federation/outboxbody, whose Expand
	// every reader reads it through).
	Body   []byte
	Public bool
	// Position is the public position (1-based); 0 for an activity that is not public.
	Position  int64
	CreatedAt time.Time
}

// ActivityOutboxInsertParams is a new outbox activity and its recipients' actor IRIs.
type ActivityOutboxInsertParams struct {
	ActivityID string
	Type       string
	Body       []byte
	Public     bool
	Recipients []string
}

// ActivityPageParams pages through a collection: the rows after the first After, at most Limit.
type ActivityPageParams struct {
	After int64
	Limit int
}

// ActivityClaimParams claims work items for one owner.
type ActivityClaimParams struct {
	Owner string
	Limit int
	// TTL sets claim_expires = database now + TTL.
	TTL time.Duration
}

// ActivityClaim fences the outcome of a claimed delivery (ID) or inbox row (ID = seq).
type ActivityClaim struct {
	ID    int64
	Owner string
	Term  int64
}

// ActivityCompleteParams settles a claimed item.
type ActivityCompleteParams struct {
	Claim ActivityClaim
	// Keep is how long a delivered delivery is kept (then expires_at passes).
	Keep time.Duration
}

// ActivityRetryParams records a failed attempt.
type ActivityRetryParams struct {
	Claim ActivityClaim
	Error string
	// HistoryLine is appended to the item's history.
	HistoryLine string
	// Backoff delays the next attempt (retry only).
	Backoff time.Duration
}

// ActivityDelivery is a row of ap_deliveries, with its activity's id (and body when claimed).
type ActivityDelivery struct {
	ID            int64
	OutboxSeq     int64
	ActivityID    string
	Recipient     string
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	History       []string
	ClaimOwner    string
	ClaimTerm     int64
	CreatedAt     time.Time
	DeliveredAt   *time.Time
	// Body is the activity's body as stored (OutboxActivity.Body).
	Body []byte
}

// Claim returns the fence of the delivery's current claim.
func (d ActivityDelivery) Claim() ActivityClaim {
	return ActivityClaim{ID: d.ID, Owner: d.ClaimOwner, Term: d.ClaimTerm}
}

// InboxActivity is a row of ap_inbox.
type InboxActivity struct {
	Seq        int64
	ActivityID string
	// Actor is the activity's actor, as verified (the signer, live) or checked (sync).
	Actor string
	// From is who it came from: the signer (live) or the actor whose collection was read (sync).
	From          string
	Type          string
	Body          []byte
	Source        string
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	History       []string
	ClaimOwner    string
	ClaimTerm     int64
	ReceivedAt    time.Time
	DoneAt        *time.Time
}

// Claim returns the fence of the row's current claim.
func (a InboxActivity) Claim() ActivityClaim {
	return ActivityClaim{ID: a.Seq, Owner: a.ClaimOwner, Term: a.ClaimTerm}
}

// ActivityInboxInsertParams is a received activity.
type ActivityInboxInsertParams struct {
	ActivityID string
	Actor      string
	From       string
	Type       string
	Body       []byte
	Source     string
}

// ActivityCountsResult holds the service's gauges.
type ActivityCountsResult struct {
	DeliveriesPending int64
	DeliveriesParked  int64
	InboxQueued       int64
	InboxParked       int64
	// Followers and Following count accepted relationships.
	Followers int64
	Following int64
}

// CachedActor is a row of ap_actors: what a peer's actor document said when it was fetched.
type CachedActor struct {
	IRI       string
	Inbox     string
	Outbox    string
	KeyID     string
	KeyPEM    string
	Document  []byte
	FetchedAt time.Time
}

// Relationship is a row of ap_relationships.
type Relationship struct {
	Kind   string
	Actor  string
	Status string
	// ActivityID is the Follow or Invite that started the relationship (ours for following and
	// witness, the peer's for follower and witnessing).
	ActivityID string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// RelationshipUpsertParams creates or replaces a relationship.
type RelationshipUpsertParams struct {
	Kind       string
	Actor      string
	Status     string
	ActivityID string
}

// RelationshipAnswerParams is our answer to a peer's request.
type RelationshipAnswerParams struct {
	Kind       string
	Actor      string
	Status     string
	ActivityID string
	// Interval is the least time between two answers posted for the relationship.
	Interval time.Duration
	// Now replaces the database clock; tests only.
	Now *time.Time
}

// RelationshipSetStatusParams answers a pending relationship.
type RelationshipSetStatusParams struct {
	Kind       string
	Actor      string
	ActivityID string
	Status     string
}

// RelationshipListParams pages through relationships.
type RelationshipListParams struct {
	Kind   string
	Status string // empty: any
	Offset int64
	Limit  int
}

// AcceptListEntry is a row of ap_accept_list.
type AcceptListEntry struct {
	Type      string
	Actor     string
	CreatedAt time.Time
}
