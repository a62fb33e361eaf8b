package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// ActivityOutboxInsert implements store.Executor. The single writer hands out public positions
// in commit order.
func (e executor) ActivityOutboxInsert(ctx context.Context, p store.ActivityOutboxInsertParams) (store.OutboxActivity, error) {
	now := time.Now()
	a := store.OutboxActivity{ActivityID: p.ActivityID, Type: p.Type, Body: p.Body, Public: p.Public, CreatedAt: fromMicros(micros(now))}
	err := e.batch(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, qActivityOutboxInsert, p.ActivityID, p.Type, p.Body, p.Public, p.Public,
			micros(now)).Scan(&a.Seq, &a.Position); err != nil {
			return err
		}
		var done []string
		for _, r := range p.Recipients {
			if slices.Contains(done, r) {
				continue
			}
			done = append(done, r)
			if _, err := tx.ExecContext(ctx, qActivityDeliveryInsert, a.Seq, r, micros(now), micros(now)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return a, fmt.Errorf("insert outbox activity %s: %w", p.ActivityID, interpretError(err))
	}
	return a, nil
}

// ActivityOutboxGet implements store.Executor.
func (e executor) ActivityOutboxGet(ctx context.Context, activityID string) (store.OutboxActivity, error) {
	a, err := scanOutbox(e.r.QueryRowContext(ctx, qActivityOutboxGet, activityID))
	if err != nil {
		return a, fmt.Errorf("get outbox activity %s: %w", activityID, notFound(err))
	}
	return a, nil
}

// ActivityOutboxListPublic implements store.Executor.
func (e executor) ActivityOutboxListPublic(ctx context.Context, p store.ActivityPageParams) ([]store.OutboxActivity, error) {
	out, err := queryAll(ctx, e.r, scanOutbox, qActivityOutboxListPublic, p.After, p.After+int64(p.Limit))
	if err != nil {
		return nil, fmt.Errorf("list public outbox: %w", err)
	}
	return out, nil
}

// ActivityOutboxCountPublic implements store.Executor.
func (e executor) ActivityOutboxCountPublic(ctx context.Context) (int64, error) {
	var n int64
	if err := e.r.QueryRowContext(ctx, qActivityOutboxCountPublic).Scan(&n); err != nil {
		return 0, fmt.Errorf("count public outbox: %w", err)
	}
	return n, nil
}

func checkClaim(p store.ActivityClaimParams) error {
	if p.Owner == "" || p.Limit <= 0 || p.TTL <= 0 {
		return fmt.Errorf("owner %q, limit %d, ttl %s: all must be set", p.Owner, p.Limit, p.TTL)
	}
	return nil
}

// ActivityDeliveryClaim implements store.Executor.
func (e executor) ActivityDeliveryClaim(ctx context.Context, p store.ActivityClaimParams) ([]store.ActivityDelivery, error) {
	if err := checkClaim(p); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	now := time.Now()
	out, err := queryAll(ctx, e.w, scanClaimedDelivery, qActivityDeliveryClaim, p.Owner, micros(now.Add(p.TTL)),
		historyStamp(now), micros(now), micros(now), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	// RETURNING gives rows in no particular order.
	sort.SliceStable(out, func(i, j int) bool { return out[i].NextAttemptAt.Before(out[j].NextAttemptAt) })
	return out, nil
}

// ActivityDeliveryComplete implements store.Executor.
func (e executor) ActivityDeliveryComplete(ctx context.Context, p store.ActivityCompleteParams) error {
	now := time.Now()
	return e.activityFenced(ctx, "complete delivery", p.Claim, qActivityDeliveryComplete,
		micros(now), micros(now.Add(max(p.Keep, 0))))
}

// ActivityDeliveryRetry implements store.Executor.
func (e executor) ActivityDeliveryRetry(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "retry delivery", p.Claim, qActivityDeliveryRetry,
		micros(time.Now().Add(max(p.Backoff, 0))), p.Error, p.HistoryLine)
}

// ActivityDeliveryPark implements store.Executor.
func (e executor) ActivityDeliveryPark(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "park delivery", p.Claim, qActivityDeliveryPark, p.Error, p.HistoryLine)
}

// activityFenced runs an outcome whose last three parameters are the claim's id, owner and
// term; no row changed means the claim is no longer held.
func (e executor) activityFenced(ctx context.Context, op string, c store.ActivityClaim, q string, args ...any) error {
	res, err := e.w.ExecContext(ctx, q, append(args, c.ID, c.Owner, c.Term)...)
	if err != nil {
		return fmt.Errorf("%s %d: %w", op, c.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s %d (owner %s, term %d): %w", op, c.ID, c.Owner, c.Term, store.ErrLeaseLost)
	}
	return nil
}

// ActivityDeliveryRearm implements store.Executor.
func (e executor) ActivityDeliveryRearm(ctx context.Context, id int64) error {
	now := time.Now()
	res, err := e.w.ExecContext(ctx, qActivityDeliveryRearm, micros(now), historyStamp(now)+" re-armed by an operator", id)
	if err != nil {
		return fmt.Errorf("re-arm delivery %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("re-arm delivery %d: not parked: %w", id, store.ErrNotFound)
	}
	return nil
}

// ActivityDeliveryGet implements store.Executor.
func (e executor) ActivityDeliveryGet(ctx context.Context, id int64) (store.ActivityDelivery, error) {
	d, err := scanDelivery(e.r.QueryRowContext(ctx, qActivityDeliveryGet, id))
	if err != nil {
		return d, fmt.Errorf("get delivery %d: %w", id, notFound(err))
	}
	return d, nil
}

// ActivityDeliveryListByActivity implements store.Executor.
func (e executor) ActivityDeliveryListByActivity(ctx context.Context, activityID string) ([]store.ActivityDelivery, error) {
	out, err := queryAll(ctx, e.r, scanDelivery, qActivityDeliveryListByActivity, activityID)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", activityID, err)
	}
	return out, nil
}

// ActivityDeliveryLatest implements store.Executor.
func (e executor) ActivityDeliveryLatest(ctx context.Context, recipient string) (store.ActivityDelivery, error) {
	out, err := queryAll(ctx, e.r, scanDelivery, qActivityDeliveryLatest, recipient)
	if err != nil {
		return store.ActivityDelivery{}, fmt.Errorf("latest delivery to %s: %w", recipient, err)
	}
	if len(out) == 0 {
		return store.ActivityDelivery{}, fmt.Errorf("latest delivery to %s: %w", recipient, store.ErrNotFound)
	}
	return out[0], nil
}

// ActivityInboxInsert implements store.Executor.
func (e executor) ActivityInboxInsert(ctx context.Context, p store.ActivityInboxInsertParams) (int64, bool, error) {
	now := nowMicros()
	var seq int64
	err := e.w.QueryRowContext(ctx, qActivityInboxInsert, p.ActivityID, p.Actor, p.From, p.Type, p.Body, p.Source,
		now, now).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
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
	now := time.Now()
	out, err := queryAll(ctx, e.w, scanInbox, qActivityInboxClaim, p.Owner, micros(now.Add(p.TTL)), historyStamp(now),
		micros(now), micros(now), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("claim inbox activities: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].NextAttemptAt.Equal(out[j].NextAttemptAt) {
			return out[i].NextAttemptAt.Before(out[j].NextAttemptAt)
		}
		return out[i].Seq < out[j].Seq
	})
	return out, nil
}

// ActivityInboxComplete implements store.Executor.
func (e executor) ActivityInboxComplete(ctx context.Context, p store.ActivityCompleteParams) error {
	now := time.Now()
	var expires sql.NullInt64
	if p.Keep > 0 {
		expires = sql.NullInt64{Int64: micros(now.Add(p.Keep)), Valid: true}
	}
	return e.activityFenced(ctx, "complete inbox activity", p.Claim, qActivityInboxComplete, micros(now), expires)
}

// ActivityInboxRetry implements store.Executor.
func (e executor) ActivityInboxRetry(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "retry inbox activity", p.Claim, qActivityInboxRetry,
		micros(time.Now().Add(max(p.Backoff, 0))), p.Error, p.HistoryLine)
}

// ActivityInboxPark implements store.Executor.
func (e executor) ActivityInboxPark(ctx context.Context, p store.ActivityRetryParams) error {
	return e.activityFenced(ctx, "park inbox activity", p.Claim, qActivityInboxPark, p.Error, p.HistoryLine)
}

// ActivityInboxRearm implements store.Executor.
func (e executor) ActivityInboxRearm(ctx context.Context, seq int64) error {
	now := time.Now()
	res, err := e.w.ExecContext(ctx, qActivityInboxRearm, micros(now), historyStamp(now)+" re-queued by an operator", seq)
	if err != nil {
		return fmt.Errorf("re-queue inbox activity %d: %w", seq, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("re-queue inbox activity %d: not parked: %w", seq, store.ErrNotFound)
	}
	return nil
}

// ActivityInboxGet implements store.Executor.
func (e executor) ActivityInboxGet(ctx context.Context, seq int64) (store.InboxActivity, error) {
	a, err := scanInbox(e.r.QueryRowContext(ctx, qActivityInboxGet, seq))
	if err != nil {
		return a, fmt.Errorf("get inbox activity %d: %w", seq, notFound(err))
	}
	return a, nil
}

// ActivityInboxGetByActivity implements store.Executor.
func (e executor) ActivityInboxGetByActivity(ctx context.Context, activityID string) (store.InboxActivity, error) {
	a, err := scanInbox(e.r.QueryRowContext(ctx, qActivityInboxGetByActivity, activityID))
	if err != nil {
		return a, fmt.Errorf("get inbox activity %s: %w", activityID, notFound(err))
	}
	return a, nil
}

// ActivityInboxList implements store.Executor.
func (e executor) ActivityInboxList(ctx context.Context, p store.ActivityPageParams) ([]store.InboxActivity, error) {
	out, err := queryAll(ctx, e.r, scanInbox, qActivityInboxList, p.After, p.After+int64(max(p.Limit, 0)))
	if err != nil {
		return nil, fmt.Errorf("list inbox: %w", err)
	}
	return out, nil
}

// ActivityInboxLastSeq implements store.Executor.
func (e executor) ActivityInboxLastSeq(ctx context.Context) (int64, error) {
	var n int64
	if err := e.r.QueryRowContext(ctx, qActivityInboxLastSeq).Scan(&n); err != nil {
		return 0, fmt.Errorf("last inbox seq: %w", err)
	}
	return n, nil
}

// ActivityCounts implements store.Executor.
func (e executor) ActivityCounts(ctx context.Context) (store.ActivityCountsResult, error) {
	var c store.ActivityCountsResult
	if err := e.r.QueryRowContext(ctx, qActivityCounts).Scan(&c.DeliveriesPending, &c.DeliveriesParked, &c.InboxQueued,
		&c.InboxParked, &c.Followers, &c.Following); err != nil {
		return c, fmt.Errorf("count activities: %w", err)
	}
	return c, nil
}

// ActorCacheUpsert implements store.Executor.
func (e executor) ActorCacheUpsert(ctx context.Context, a store.CachedActor) error {
	if _, err := e.w.ExecContext(ctx, qActorCacheUpsert, a.IRI, a.Inbox, a.Outbox, a.KeyID, a.KeyPEM, a.Document,
		micros(a.FetchedAt)); err != nil {
		return fmt.Errorf("cache actor %s: %w", a.IRI, err)
	}
	return nil
}

// ActorCacheGet implements store.Executor.
func (e executor) ActorCacheGet(ctx context.Context, iri string) (store.CachedActor, error) {
	a, err := scanActor(e.r.QueryRowContext(ctx, qActorCacheGet, iri))
	if err != nil {
		return a, fmt.Errorf("get cached actor %s: %w", iri, notFound(err))
	}
	return a, nil
}

// RelationshipUpsert implements store.Executor.
func (e executor) RelationshipUpsert(ctx context.Context, p store.RelationshipUpsertParams) error {
	now := nowMicros()
	if _, err := e.w.ExecContext(ctx, qRelationshipUpsert, p.Kind, p.Actor, p.Status, p.ActivityID, now, now); err != nil {
		return fmt.Errorf("upsert %s %s: %w", p.Kind, p.Actor, err)
	}
	return nil
}

// RelationshipAnswer implements store.Executor: the read and the upsert in one write
// transaction, which the single writer serializes.
func (e executor) RelationshipAnswer(ctx context.Context, p store.RelationshipAnswerParams) (bool, error) {
	now := time.Now()
	if p.Now != nil {
		now = *p.Now
	}
	answer := true
	err := e.batch(ctx, func(tx *sql.Tx) error {
		var status string
		var answered sql.NullInt64
		err := tx.QueryRowContext(ctx, qRelationshipAnswered, p.Kind, p.Actor).Scan(&status, &answered)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			answer = status != p.Status || !answered.Valid || !fromMicros(answered.Int64).Add(p.Interval).After(now)
		}
		_, err = tx.ExecContext(ctx, qRelationshipAnswer, p.Kind, p.Actor, p.Status, p.ActivityID, micros(now), answer)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("answer %s %s: %w", p.Kind, p.Actor, err)
	}
	return answer, nil
}

// RelationshipSetStatus implements store.Executor.
func (e executor) RelationshipSetStatus(ctx context.Context, p store.RelationshipSetStatusParams) (store.Relationship, error) {
	r, err := scanRelationship(e.w.QueryRowContext(ctx, qRelationshipSetStatus, p.Status, nowMicros(), p.Kind, p.Actor, p.ActivityID))
	if err != nil {
		return r, fmt.Errorf("set %s %s %s: %w", p.Kind, p.Actor, p.Status, notFound(err))
	}
	return r, nil
}

// RelationshipGet implements store.Executor.
func (e executor) RelationshipGet(ctx context.Context, kind, actor string) (store.Relationship, error) {
	r, err := scanRelationship(e.r.QueryRowContext(ctx, qRelationshipGet, kind, actor))
	if err != nil {
		return r, fmt.Errorf("get %s %s: %w", kind, actor, notFound(err))
	}
	return r, nil
}

// RelationshipDelete implements store.Executor.
func (e executor) RelationshipDelete(ctx context.Context, kind, actor string) error {
	res, err := e.w.ExecContext(ctx, qRelationshipDelete, kind, actor)
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", kind, actor, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete %s %s: %w", kind, actor, store.ErrNotFound)
	}
	return nil
}

// RelationshipList implements store.Executor.
func (e executor) RelationshipList(ctx context.Context, p store.RelationshipListParams) ([]store.Relationship, error) {
	out, err := queryAll(ctx, e.r, scanRelationship, qRelationshipList, p.Kind, p.Status, p.Status, p.Limit, p.Offset)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p.Kind, err)
	}
	return out, nil
}

// RelationshipCount implements store.Executor.
func (e executor) RelationshipCount(ctx context.Context, kind, status string) (int64, error) {
	var n int64
	if err := e.r.QueryRowContext(ctx, qRelationshipCount, kind, status, status).Scan(&n); err != nil {
		return 0, fmt.Errorf("count %s: %w", kind, err)
	}
	return n, nil
}

// AcceptListInsert implements store.Executor.
func (e executor) AcceptListInsert(ctx context.Context, listType, actor string) (bool, error) {
	res, err := e.w.ExecContext(ctx, qAcceptListInsert, listType, actor, nowMicros())
	if err != nil {
		return false, fmt.Errorf("add %s to accept list %s: %w", actor, listType, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// AcceptListDelete implements store.Executor.
func (e executor) AcceptListDelete(ctx context.Context, listType, actor string) (bool, error) {
	res, err := e.w.ExecContext(ctx, qAcceptListDelete, listType, actor)
	if err != nil {
		return false, fmt.Errorf("remove %s from accept list %s: %w", actor, listType, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// AcceptListContains implements store.Executor.
func (e executor) AcceptListContains(ctx context.Context, listType, actor string) (bool, error) {
	var ok bool
	if err := e.r.QueryRowContext(ctx, qAcceptListContains, listType, actor).Scan(&ok); err != nil {
		return false, fmt.Errorf("look up %s in accept list %s: %w", actor, listType, err)
	}
	return ok, nil
}

// AcceptListList implements store.Executor.
func (e executor) AcceptListList(ctx context.Context, listType string) ([]store.AcceptListEntry, error) {
	out, err := queryAll(ctx, e.r, func(r scanner) (store.AcceptListEntry, error) {
		var a store.AcceptListEntry
		var created int64
		err := r.Scan(&a.Type, &a.Actor, &created)
		a.CreatedAt = fromMicros(created)
		return a, err
	}, qAcceptListList, listType, listType)
	if err != nil {
		return nil, fmt.Errorf("list accept list %q: %w", listType, err)
	}
	return out, nil
}

// SyncPositionGet implements store.Executor.
func (e executor) SyncPositionGet(ctx context.Context, source string) (string, error) {
	var pos string
	if err := e.r.QueryRowContext(ctx, qSyncPositionGet, source).Scan(&pos); err != nil {
		return "", fmt.Errorf("get sync position of %s: %w", source, notFound(err))
	}
	return pos, nil
}

// SyncPositionSet implements store.Executor.
func (e executor) SyncPositionSet(ctx context.Context, source, position string) error {
	if _, err := e.w.ExecContext(ctx, qSyncPositionSet, source, position, nowMicros()); err != nil {
		return fmt.Errorf("set sync position of %s: %w", source, err)
	}
	return nil
}

// notFound maps sql.ErrNoRows to store.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanOutbox(r scanner) (store.OutboxActivity, error) {
	var a store.OutboxActivity
	var created int64
	err := r.Scan(&a.Seq, &a.ActivityID, &a.Type, &a.Body, &a.Public, &a.Position, &created)
	a.CreatedAt = fromMicros(created)
	return a, err
}

func scanDelivery(r scanner) (store.ActivityDelivery, error) {
	return scanDeliveryInto(r, nil)
}

func scanClaimedDelivery(r scanner) (store.ActivityDelivery, error) {
	var body []byte
	d, err := scanDeliveryInto(r, &body)
	d.Body = body
	return d, err
}

func scanDeliveryInto(r scanner, body *[]byte) (store.ActivityDelivery, error) {
	var d store.ActivityDelivery
	var hist string
	var next, created int64
	var delivered sql.NullInt64
	dest := []any{&d.ID, &d.OutboxSeq, &d.ActivityID, &d.Recipient, &d.Status, &d.Attempts, &next, &d.LastError,
		&hist, &d.ClaimOwner, &d.ClaimTerm, &created, &delivered}
	if body != nil {
		dest = append(dest, body)
	}
	if err := r.Scan(dest...); err != nil {
		return d, err
	}
	d.History = parseHistory(hist)
	d.NextAttemptAt, d.CreatedAt, d.DeliveredAt = fromMicros(next), fromMicros(created), fromNullMicros(delivered)
	return d, nil
}

func scanInbox(r scanner) (store.InboxActivity, error) {
	var a store.InboxActivity
	var hist string
	var next, received int64
	var done sql.NullInt64
	if err := r.Scan(&a.Seq, &a.ActivityID, &a.Actor, &a.From, &a.Type, &a.Body, &a.Source, &a.Status, &a.Attempts,
		&next, &a.LastError, &hist, &a.ClaimOwner, &a.ClaimTerm, &received, &done); err != nil {
		return a, err
	}
	a.History = parseHistory(hist)
	a.NextAttemptAt, a.ReceivedAt, a.DoneAt = fromMicros(next), fromMicros(received), fromNullMicros(done)
	return a, nil
}

func scanActor(r scanner) (store.CachedActor, error) {
	var a store.CachedActor
	var fetched int64
	err := r.Scan(&a.IRI, &a.Inbox, &a.Outbox, &a.KeyID, &a.KeyPEM, &a.Document, &fetched)
	a.FetchedAt = fromMicros(fetched)
	return a, err
}

func scanRelationship(r scanner) (store.Relationship, error) {
	var x store.Relationship
	var created, updated int64
	err := r.Scan(&x.Kind, &x.Actor, &x.Status, &x.ActivityID, &created, &updated)
	x.CreatedAt, x.UpdatedAt = fromMicros(created), fromMicros(updated)
	return x, err
}

// ActivityReleaseClaims implements store.Executor.
func (e executor) ActivityReleaseClaims(ctx context.Context, owner string) (int64, error) {
	var n int64
	for _, q := range []string{qActivityInboxRelease, qActivityDeliveryRelease} {
		res, err := e.w.ExecContext(ctx, q, owner)
		if err != nil {
			return n, fmt.Errorf("release claims of %s: %w", owner, interpretError(err))
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, nil
}
