package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/anchord/anchord/internal/store"
)

// ActivityOutboxInsert implements store.Executor. A public activity takes the position lock
// first; both statements go in one pgx batch, which PostgreSQL runs as one implicit transaction
// when the caller has none open, so the lock lasts until the insert commits either way.
func (e executor) ActivityOutboxInsert(ctx context.Context, p store.ActivityOutboxInsertParams) (store.OutboxActivity, error) {
	a := store.OutboxActivity{ActivityID: p.ActivityID, Type: p.Type, Body: p.Body, Public: p.Public}
	recipients := dedupe(p.Recipients)
	b := &pgx.Batch{}
	if p.Public {
		b.Queue(qActivityOutboxLock)
	}
	b.Queue(qActivityOutboxInsert, p.ActivityID, p.Type, p.Body, p.Public, recipients).QueryRow(func(r pgx.Row) error {
		return r.Scan(&a.Seq, &a.Position, &a.CreatedAt)
	})
	if err := e.q.SendBatch(ctx, b).Close(); err != nil {
		return a, fmt.Errorf("insert outbox activity %s: %w", p.ActivityID, interpretError(err))
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

// ActivityOutboxGet implements store.Executor.
func (e executor) ActivityOutboxGet(ctx context.Context, activityID string) (store.OutboxActivity, error) {
	a, err := scanOutbox(e.q.QueryRow(ctx, qActivityOutboxGet, activityID))
	if err != nil {
		return a, fmt.Errorf("get outbox activity %s: %w", activityID, interpretError(err))
	}
	return a, nil
}

// ActivityOutboxListPublic implements store.Executor.
func (e executor) ActivityOutboxListPublic(ctx context.Context, p store.ActivityPageParams) ([]store.OutboxActivity, error) {
	rows, err := e.q.Query(ctx, qActivityOutboxListPublic, p.After, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list public outbox: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.OutboxActivity, error) { return scanOutbox(r) })
	if err != nil {
		return nil, fmt.Errorf("list public outbox: %w", err)
	}
	return out, nil
}

// ActivityOutboxCountPublic implements store.Executor.
func (e executor) ActivityOutboxCountPublic(ctx context.Context) (int64, error) {
	var n int64
	if err := e.q.QueryRow(ctx, qActivityOutboxCountPublic).Scan(&n); err != nil {
		return 0, fmt.Errorf("count public outbox: %w", err)
	}
	return n, nil
}

// ActivityDeliveryClaim implements store.Executor.
func (e executor) ActivityDeliveryClaim(ctx context.Context, p store.ActivityClaimParams) ([]store.ActivityDelivery, error) {
	if err := checkClaim(p); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	rows, err := e.q.Query(ctx, qActivityDeliveryClaim, p.Owner, p.TTL.Microseconds(), p.Limit, historyStamp())
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ActivityDelivery, error) { return scanDelivery(r, true) })
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, nil
}

func checkClaim(p store.ActivityClaimParams) error {
	if p.Owner == "" || p.Limit <= 0 || p.TTL <= 0 {
		return fmt.Errorf("owner %q, limit %d, ttl %s: all must be set", p.Owner, p.Limit, p.TTL)
	}
	return nil
}

// ActivityDeliveryComplete implements store.Executor.
func (e executor) ActivityDeliveryComplete(ctx context.Context, p store.ActivityCompleteParams) error {
	return e.activityFenced(ctx, "complete delivery", p.Claim, qActivityDeliveryComplete, max(p.Keep, 0).Microseconds())
}

// ActivityDeliveryRetry implements store.Executor.
func (e executor) ActivityDeliveryRetry(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "retry delivery", p.Claim, qActivityDeliveryRetry,
		max(p.Backoff, 0).Microseconds(), p.Error, p.HistoryLine)
}

// ActivityDeliveryPark implements store.Executor.
func (e executor) ActivityDeliveryPark(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "park delivery", p.Claim, qActivityDeliveryPark, p.Error, p.HistoryLine)
}

// activityFenced runs an outcome whose first three parameters are the claim's id, owner and
// term; no row changed means the claim is no longer held.
func (e executor) activityFenced(ctx context.Context, op string, c store.ActivityClaim, q string, args ...any) error {
	tag, err := e.q.Exec(ctx, q, append([]any{c.ID, c.Owner, c.Term}, args...)...)
	if err != nil {
		return fmt.Errorf("%s %d: %w", op, c.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s %d (owner %s, term %d): %w", op, c.ID, c.Owner, c.Term, store.ErrLeaseLost)
	}
	return nil
}

// ActivityDeliveryRearm implements store.Executor.
func (e executor) ActivityDeliveryRearm(ctx context.Context, id int64) error {
	tag, err := e.q.Exec(ctx, qActivityDeliveryRearm, id, historyStamp()+" re-armed by an operator")
	if err != nil {
		return fmt.Errorf("re-arm delivery %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("re-arm delivery %d: not parked: %w", id, store.ErrNotFound)
	}
	return nil
}

// ActivityDeliveryGet implements store.Executor.
func (e executor) ActivityDeliveryGet(ctx context.Context, id int64) (store.ActivityDelivery, error) {
	d, err := scanDelivery(e.q.QueryRow(ctx, qActivityDeliveryGet, id), false)
	if err != nil {
		return d, fmt.Errorf("get delivery %d: %w", id, interpretError(err))
	}
	return d, nil
}

// ActivityDeliveryListByActivity implements store.Executor.
func (e executor) ActivityDeliveryListByActivity(ctx context.Context, activityID string) ([]store.ActivityDelivery, error) {
	rows, err := e.q.Query(ctx, qActivityDeliveryListByActivity, activityID)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", activityID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ActivityDelivery, error) { return scanDelivery(r, false) })
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", activityID, err)
	}
	return out, nil
}

// ActivityDeliveryLatest implements store.Executor.
func (e executor) ActivityDeliveryLatest(ctx context.Context, recipient string) (store.ActivityDelivery, error) {
	d, err := scanDelivery(e.q.QueryRow(ctx, qActivityDeliveryLatest, recipient), false)
	if err != nil {
		return d, fmt.Errorf("latest delivery to %s: %w", recipient, interpretError(err))
	}
	return d, nil
}

// ActivityInboxInsert implements store.Executor.
func (e executor) ActivityInboxInsert(ctx context.Context, p store.ActivityInboxInsertParams) (int64, bool, error) {
	var seq int64
	err := e.q.QueryRow(ctx, qActivityInboxInsert, p.ActivityID, p.Actor, p.From, p.Type, p.Body, p.Source).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("insert inbox activity %s: %w", p.ActivityID, interpretError(err))
	}
	return seq, true, nil
}

// ActivityInboxClaim implements store.Executor.
func (e executor) ActivityInboxClaim(ctx context.Context, p store.ActivityClaimParams) ([]store.InboxActivity, error) {
	if err := checkClaim(p); err != nil {
		return nil, fmt.Errorf("claim inbox activities: %w", err)
	}
	rows, err := e.q.Query(ctx, qActivityInboxClaim, p.Owner, p.TTL.Microseconds(), p.Limit, historyStamp())
	if err != nil {
		return nil, fmt.Errorf("claim inbox activities: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.InboxActivity, error) { return scanInbox(r) })
	if err != nil {
		return nil, fmt.Errorf("claim inbox activities: %w", err)
	}
	return out, nil
}

// ActivityInboxComplete implements store.Executor.
func (e executor) ActivityInboxComplete(ctx context.Context, p store.ActivityCompleteParams) error {
	var keep *int64
	if p.Keep > 0 {
		us := p.Keep.Microseconds()
		keep = &us
	}
	return e.activityFenced(ctx, "complete inbox activity", p.Claim, qActivityInboxComplete, keep)
}

// ActivityInboxRetry implements store.Executor.
func (e executor) ActivityInboxRetry(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "retry inbox activity", p.Claim, qActivityInboxRetry,
		max(p.Backoff, 0).Microseconds(), p.Error, p.HistoryLine)
}

// ActivityInboxPark implements store.Executor.
func (e executor) ActivityInboxPark(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "park inbox activity", p.Claim, qActivityInboxPark, p.Error, p.HistoryLine)
}

// ActivityInboxRearm implements store.Executor.
func (e executor) ActivityInboxRearm(ctx context.Context, seq int64) error {
	tag, err := e.q.Exec(ctx, qActivityInboxRearm, seq, historyStamp()+" re-queued by an operator")
	if err != nil {
		return fmt.Errorf("re-queue inbox activity %d: %w", seq, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("re-queue inbox activity %d: not parked: %w", seq, store.ErrNotFound)
	}
	return nil
}

// ActivityInboxGet implements store.Executor.
func (e executor) ActivityInboxGet(ctx context.Context, seq int64) (store.InboxActivity, error) {
	a, err := scanInbox(e.q.QueryRow(ctx, qActivityInboxGet, seq))
	if err != nil {
		return a, fmt.Errorf("get inbox activity %d: %w", seq, interpretError(err))
	}
	return a, nil
}

// ActivityInboxGetByActivity implements store.Executor.
func (e executor) ActivityInboxGetByActivity(ctx context.Context, activityID string) (store.InboxActivity, error) {
	a, err := scanInbox(e.q.QueryRow(ctx, qActivityInboxGetByActivity, activityID))
	if err != nil {
		return a, fmt.Errorf("get inbox activity %s: %w", activityID, interpretError(err))
	}
	return a, nil
}

// ActivityInboxList implements store.Executor.
func (e executor) ActivityInboxList(ctx context.Context, p store.ActivityPageParams) ([]store.InboxActivity, error) {
	rows, err := e.q.Query(ctx, qActivityInboxList, p.After, p.After+int64(max(p.Limit, 0)))
	if err != nil {
		return nil, fmt.Errorf("list inbox: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.InboxActivity, error) { return scanInbox(r) })
	if err != nil {
		return nil, fmt.Errorf("list inbox: %w", err)
	}
	return out, nil
}

// ActivityInboxLastSeq implements store.Executor.
func (e executor) ActivityInboxLastSeq(ctx context.Context) (int64, error) {
	var n int64
	if err := e.q.QueryRow(ctx, qActivityInboxLastSeq).Scan(&n); err != nil {
		return 0, fmt.Errorf("last inbox seq: %w", err)
	}
	return n, nil
}

// ActivityCounts implements store.Executor.
func (e executor) ActivityCounts(ctx context.Context) (store.ActivityCountsResult, error) {
	var c store.ActivityCountsResult
	if err := e.q.QueryRow(ctx, qActivityCounts).Scan(&c.DeliveriesPending, &c.DeliveriesParked, &c.InboxQueued,
		&c.InboxParked, &c.Followers, &c.Following); err != nil {
		return c, fmt.Errorf("count activities: %w", err)
	}
	return c, nil
}

// ActorCacheUpsert implements store.Executor.
func (e executor) ActorCacheUpsert(ctx context.Context, a store.CachedActor) error {
	if _, err := e.q.Exec(ctx, qActorCacheUpsert, a.IRI, a.Inbox, a.Outbox, a.KeyID, a.KeyPEM, a.Document, a.FetchedAt); err != nil {
		return fmt.Errorf("cache actor %s: %w", a.IRI, err)
	}
	return nil
}

// ActorCacheGet implements store.Executor.
func (e executor) ActorCacheGet(ctx context.Context, iri string) (store.CachedActor, error) {
	a, err := scanActor(e.q.QueryRow(ctx, qActorCacheGet, iri))
	if err != nil {
		return a, fmt.Errorf("get cached actor %s: %w", iri, interpretError(err))
	}
	return a, nil
}

// RelationshipUpsert implements store.Executor.
func (e executor) RelationshipUpsert(ctx context.Context, p store.RelationshipUpsertParams) error {
	if _, err := e.q.Exec(ctx, qRelationshipUpsert, p.Kind, p.Actor, p.Status, p.ActivityID); err != nil {
		return fmt.Errorf("upsert %s %s: %w", p.Kind, p.Actor, err)
	}
	return nil
}

// RelationshipAnswer implements store.Executor.
func (e executor) RelationshipAnswer(ctx context.Context, p store.RelationshipAnswerParams) (bool, error) {
	var answer bool
	if err := e.q.QueryRow(ctx, qRelationshipAnswer, p.Kind, p.Actor, p.Status, p.ActivityID,
		max(p.Interval, 0).Microseconds(), p.Now).Scan(&answer); err != nil {
		return false, fmt.Errorf("answer %s %s: %w", p.Kind, p.Actor, interpretError(err))
	}
	return answer, nil
}

// RelationshipSetStatus implements store.Executor.
func (e executor) RelationshipSetStatus(ctx context.Context, p store.RelationshipSetStatusParams) (store.Relationship, error) {
	r, err := scanRelationship(e.q.QueryRow(ctx, qRelationshipSetStatus, p.Kind, p.Actor, p.ActivityID, p.Status))
	if err != nil {
		return r, fmt.Errorf("set %s %s %s: %w", p.Kind, p.Actor, p.Status, interpretError(err))
	}
	return r, nil
}

// RelationshipGet implements store.Executor.
func (e executor) RelationshipGet(ctx context.Context, kind, actor string) (store.Relationship, error) {
	r, err := scanRelationship(e.q.QueryRow(ctx, qRelationshipGet, kind, actor))
	if err != nil {
		return r, fmt.Errorf("get %s %s: %w", kind, actor, interpretError(err))
	}
	return r, nil
}

// RelationshipDelete implements store.Executor.
func (e executor) RelationshipDelete(ctx context.Context, kind, actor string) error {
	tag, err := e.q.Exec(ctx, qRelationshipDelete, kind, actor)
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", kind, actor, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete %s %s: %w", kind, actor, store.ErrNotFound)
	}
	return nil
}

// RelationshipList implements store.Executor.
func (e executor) RelationshipList(ctx context.Context, p store.RelationshipListParams) ([]store.Relationship, error) {
	rows, err := e.q.Query(ctx, qRelationshipList, p.Kind, p.Status, p.Offset, p.Limit)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.Kind, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Relationship, error) { return scanRelationship(r) })
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.Kind, err)
	}
	return out, nil
}

// RelationshipCount implements store.Executor.
func (e executor) RelationshipCount(ctx context.Context, kind, status string) (int64, error) {
	var n int64
	if err := e.q.QueryRow(ctx, qRelationshipCount, kind, status).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", kind, err)
	}
	return n, nil
}

// AcceptListInsert implements store.Executor.
func (e executor) AcceptListInsert(ctx context.Context, listType, actor string) (bool, error) {
	tag, err := e.q.Exec(ctx, qAcceptListInsert, listType, actor)
	if err != nil {
		return false, fmt.Errorf("add %s to accept list %s: %w", actor, listType, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AcceptListDelete implements store.Executor.
func (e executor) AcceptListDelete(ctx context.Context, listType, actor string) (bool, error) {
	tag, err := e.q.Exec(ctx, qAcceptListDelete, listType, actor)
	if err != nil {
		return false, fmt.Errorf("remove %s from accept list %s: %w", actor, listType, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AcceptListContains implements store.Executor.
func (e executor) AcceptListContains(ctx context.Context, listType, actor string) (bool, error) {
	var ok bool
	if err := e.q.QueryRow(ctx, qAcceptListContains, listType, actor).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up %s in accept list %s: %w", actor, listType, err)
	}
	return ok, nil
}

// AcceptListList implements store.Executor.
func (e executor) AcceptListList(ctx context.Context, listType string) ([]store.AcceptListEntry, error) {
	rows, err := e.q.Query(ctx, qAcceptListList, listType)
	if err != nil {
		return nil, fmt.Errorf("list accept list %q: %w", listType, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AcceptListEntry, error) {
		var a store.AcceptListEntry
		err := r.Scan(&a.Type, &a.Actor, &a.CreatedAt)
		a.CreatedAt = a.CreatedAt.UTC()
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list accept list %q: %w", listType, err)
	}
	return out, nil
}

// SyncPositionGet implements store.Executor.
func (e executor) SyncPositionGet(ctx context.Context, source string) (string, error) {
	var pos string
	if err := e.q.QueryRow(ctx, qSyncPositionGet, source).Scan(&pos); err != nil {
		return "", fmt.Errorf("get sync position of %s: %w", source, interpretError(err))
	}
	return pos, nil
}

// SyncPositionSet implements store.Executor.
func (e executor) SyncPositionSet(ctx context.Context, source, position string) error {
	if _, err := e.q.Exec(ctx, qSyncPositionSet, source, position); err != nil {
		return fmt.Errorf("set sync position of %s: %w", source, err)
	}
	return nil
}

func scanOutbox(r pgx.Row) (store.OutboxActivity, error) {
	var a store.OutboxActivity
	err := r.Scan(&a.Seq, &a.ActivityID, &a.Type, &a.Body, &a.Public, &a.Position, &a.CreatedAt)
	a.CreatedAt = a.CreatedAt.UTC()
	return a, err
}

func scanDelivery(r pgx.Row, withBody bool) (store.ActivityDelivery, error) {
	var d store.ActivityDelivery
	var hist []byte
	dest := []any{&d.ID, &d.OutboxSeq, &d.ActivityID, &d.Recipient, &d.Status, &d.Attempts, &d.NextAttemptAt,
		&d.LastError, &hist, &d.ClaimOwner, &d.ClaimTerm, &d.CreatedAt, &d.DeliveredAt}
	if withBody {
		dest = append(dest, &d.Body)
	}
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.History = parseHistory(hist)
	d.NextAttemptAt, d.CreatedAt = d.NextAttemptAt.UTC(), d.CreatedAt.UTC()
	d.DeliveredAt = utcPtr(d.DeliveredAt)
	return d, nil
}

func scanInbox(r pgx.Row) (store.InboxActivity, error) {
	var a store.InboxActivity
	var hist []byte
	if err := r.Scan(&a.Seq, &a.ActivityID, &a.Actor, &a.From, &a.Type, &a.Body, &a.Source, &a.Status, &a.Attempts,
		&a.NextAttemptAt, &a.LastError, &hist, &a.ClaimOwner, &a.ClaimTerm, &a.ReceivedAt, &a.DoneAt); err != nil {
		return a, err
	}
	a.History = parseHistory(hist)
	a.NextAttemptAt, a.ReceivedAt = a.NextAttemptAt.UTC(), a.ReceivedAt.UTC()
	a.DoneAt = utcPtr(a.DoneAt)
	return a, nil
}

func scanActor(r pgx.Row) (store.CachedActor, error) {
	var a store.CachedActor
	err := r.Scan(&a.IRI, &a.Inbox, &a.Outbox, &a.KeyID, &a.KeyPEM, &a.Document, &a.FetchedAt)
	a.FetchedAt = a.FetchedAt.UTC()
	return a, err
}

func scanRelationship(r pgx.Row) (store.Relationship, error) {
	var x store.Relationship
	err := r.Scan(&x.Kind, &x.Actor, &x.Status, &x.ActivityID, &x.CreatedAt, &x.UpdatedAt)
	x.CreatedAt, x.UpdatedAt = x.CreatedAt.UTC(), x.UpdatedAt.UTC()
	return x, err
}

// dedupe returns s without repeats, in first-seen order.
func dedupe(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// ActivityReleaseClaims implements store.Executor.
func (e executor) ActivityReleaseClaims(ctx context.Context, owner string) (int64, error) {
	var n int64
	for _, q := range []string{qActivityInboxRelease, qActivityDeliveryRelease} {
		tag, err := e.q.Exec(ctx, q, owner)
		if err != nil {
			return n, fmt.Errorf("release claims of %s: %w", owner, interpretError(err))
		}
		n += tag.RowsAffected()
	}
	return n, nil
}
