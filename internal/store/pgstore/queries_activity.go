package pgstore

// SQL of the ActivityPub service (ap_* tables).

const (
	// qActivityOutboxLock serialises the hand-out of public positions until the transaction
	// ends, so that positions follow commit order and a reader never sees position n+1 before n.
	qActivityOutboxLock = `SELECT pg_advisory_xact_lock(hashtext('anchord.ap_outbox.position'))`
	// qActivityOutboxInsert inserts the activity and its deliveries in one statement; the
	// deliveries CTE runs although nothing reads it.
	qActivityOutboxInsert = `WITH o AS (
			INSERT INTO ap_outbox (activity_id, type, body, public, position)
			VALUES ($1, $2, $3, $4, CASE WHEN $4 THEN (SELECT COALESCE(max(position), 0) + 1 FROM ap_outbox) END)
			RETURNING seq, position, created_at),
		d AS (
			INSERT INTO ap_deliveries (outbox_seq, recipient)
			SELECT o.seq, r FROM o, unnest($5::text[]) AS r
			ON CONFLICT (outbox_seq, recipient) DO NOTHING)
		SELECT seq, COALESCE(position, 0), created_at FROM o`
	qActivityOutboxColumns     = `seq, activity_id, type, body, public, COALESCE(position, 0), created_at`
	qActivityOutboxGet         = `SELECT ` + qActivityOutboxColumns + ` FROM ap_outbox WHERE activity_id = $1`
	qActivityOutboxListPublic  = `SELECT ` + qActivityOutboxColumns + ` FROM ap_outbox WHERE position > $1 AND position <= $1 + $2 ORDER BY position`
	qActivityOutboxCountPublic = `SELECT COALESCE(max(position), 0) FROM ap_outbox`

	qActivityDeliveryColumns = `d.id, d.outbox_seq, o.activity_id, d.recipient, d.status, d.attempts, d.next_attempt_at,
		d.last_error, d.history, COALESCE(d.claim_owner, ''), d.claim_term, d.created_at, d.delivered_at`

	// qActivityDeliveryClaim claims in one statement. The subquery locks the rows it picks and
	// skips rows other claimers hold; SET expressions see the old row, so a claim_owner still set
	// means the previous claim expired without an outcome: that counts as an attempt.
	qActivityDeliveryClaim = `UPDATE ap_deliveries d SET
			claim_owner = $1,
			claim_term = d.claim_term + 1,
			claim_expires = now() + $2 * interval '1 microsecond',
			attempts = d.attempts + CASE WHEN d.claim_owner IS NULL THEN 0 ELSE 1 END,
			history = CASE WHEN d.claim_owner IS NULL THEN d.history
				ELSE d.history || jsonb_build_array($4::text || ' claim of ' || d.claim_owner || ' (term ' ||
					d.claim_term::text || ') expired without an outcome') END
		FROM ap_outbox o
		WHERE o.seq = d.outbox_seq AND d.id IN (
			SELECT id FROM ap_deliveries
			WHERE status = 'pending' AND next_attempt_at <= now() AND (claim_expires IS NULL OR claim_expires < now())
			ORDER BY next_attempt_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED)
		RETURNING ` + qActivityDeliveryColumns + `, o.body`

	// The fenced outcomes: $1 id, $2 claim owner, $3 claim term.
	qActivityDeliveryFence    = ` WHERE id = $1 AND claim_owner = $2 AND claim_term = $3 AND status = 'pending'`
	qActivityDeliveryComplete = `UPDATE ap_deliveries SET status = 'delivered', attempts = attempts + 1,
		delivered_at = now(), expires_at = now() + $4 * interval '1 microsecond', claim_owner = NULL,
		claim_expires = NULL, last_error = ''` + qActivityDeliveryFence
	qActivityDeliveryRetry = `UPDATE ap_deliveries SET attempts = attempts + 1,
		next_attempt_at = now() + $4 * interval '1 microsecond', last_error = $5,
		history = history || jsonb_build_array($6::text), claim_owner = NULL, claim_expires = NULL` + qActivityDeliveryFence
	qActivityDeliveryPark = `UPDATE ap_deliveries SET status = 'parked', attempts = attempts + 1, last_error = $4,
		history = history || jsonb_build_array($5::text), claim_owner = NULL, claim_expires = NULL` + qActivityDeliveryFence
	qActivityDeliveryRearm = `UPDATE ap_deliveries SET status = 'pending', attempts = 0, next_attempt_at = now(),
		claim_owner = NULL, claim_expires = NULL, history = history || jsonb_build_array($2::text)
		WHERE id = $1 AND status = 'parked'`
	qActivityDeliveryGet = `SELECT ` + qActivityDeliveryColumns + `
		FROM ap_deliveries d JOIN ap_outbox o ON o.seq = d.outbox_seq WHERE d.id = $1`
	qActivityDeliveryListByActivity = `SELECT ` + qActivityDeliveryColumns + `
		FROM ap_deliveries d JOIN ap_outbox o ON o.seq = d.outbox_seq WHERE o.activity_id = $1 ORDER BY d.id`
	qActivityInboxRelease    = `UPDATE ap_inbox SET claim_owner = NULL, claim_expires = NULL WHERE claim_owner = $1`
	qActivityDeliveryRelease = `UPDATE ap_deliveries SET claim_owner = NULL, claim_expires = NULL WHERE claim_owner = $1`
	qActivityDeliveryLatest  = `SELECT ` + qActivityDeliveryColumns + `
		FROM ap_deliveries d JOIN ap_outbox o ON o.seq = d.outbox_seq WHERE d.recipient = $1 ORDER BY d.id DESC LIMIT 1`

	qActivityInboxInsert = `INSERT INTO ap_inbox (activity_id, actor, from_actor, type, body, source)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (activity_id) DO NOTHING RETURNING seq`
	qActivityInboxColumns = `seq, activity_id, actor, from_actor, type, body, source, status, attempts, next_attempt_at,
		last_error, history, COALESCE(claim_owner, ''), claim_term, received_at, done_at`
	qActivityInboxClaim = `UPDATE ap_inbox SET
			claim_owner = $1,
			claim_term = claim_term + 1,
			claim_expires = now() + $2 * interval '1 microsecond',
			attempts = attempts + CASE WHEN claim_owner IS NULL THEN 0 ELSE 1 END,
			history = CASE WHEN claim_owner IS NULL THEN history
				ELSE history || jsonb_build_array($4::text || ' claim of ' || claim_owner || ' (term ' ||
					claim_term::text || ') expired without an outcome') END
		WHERE seq IN (
			SELECT seq FROM ap_inbox
			WHERE status = 'queued' AND next_attempt_at <= now() AND (claim_expires IS NULL OR claim_expires < now())
			ORDER BY next_attempt_at, seq
			LIMIT $3
			FOR UPDATE SKIP LOCKED)
		RETURNING ` + qActivityInboxColumns
	qActivityInboxFence = ` WHERE seq = $1 AND claim_owner = $2 AND claim_term = $3 AND status = 'queued'`
	// $4: the retention in microseconds, NULL to keep the row.
	qActivityInboxComplete = `UPDATE ap_inbox SET status = 'done', attempts = attempts + 1, done_at = now(),
		expires_at = now() + $4::bigint * interval '1 microsecond',
		claim_owner = NULL, claim_expires = NULL, last_error = ''` + qActivityInboxFence
	qActivityInboxRetry = `UPDATE ap_inbox SET attempts = attempts + 1,
		next_attempt_at = now() + $4 * interval '1 microsecond', last_error = $5,
		history = history || jsonb_build_array($6::text), claim_owner = NULL, claim_expires = NULL` + qActivityInboxFence
	qActivityInboxPark = `UPDATE ap_inbox SET status = 'parked', attempts = attempts + 1, last_error = $4,
		history = history || jsonb_build_array($5::text), claim_owner = NULL, claim_expires = NULL` + qActivityInboxFence
	qActivityInboxRearm = `UPDATE ap_inbox SET status = 'queued', attempts = 0, next_attempt_at = now(),
		claim_owner = NULL, claim_expires = NULL, history = history || jsonb_build_array($2::text)
		WHERE seq = $1 AND status = 'parked'`
	qActivityInboxGet           = `SELECT ` + qActivityInboxColumns + ` FROM ap_inbox WHERE seq = $1`
	qActivityInboxGetByActivity = `SELECT ` + qActivityInboxColumns + ` FROM ap_inbox WHERE activity_id = $1`
	qActivityInboxList          = `SELECT ` + qActivityInboxColumns + ` FROM ap_inbox WHERE seq > $1 AND seq <= $2 ORDER BY seq`
	qActivityInboxLastSeq       = `SELECT COALESCE(max(seq), 0) FROM ap_inbox`

	qActivityCounts = `SELECT
		(SELECT count(*) FROM ap_deliveries WHERE status = 'pending'),
		(SELECT count(*) FROM ap_deliveries WHERE status = 'parked'),
		(SELECT count(*) FROM ap_inbox WHERE status = 'queued'),
		(SELECT count(*) FROM ap_inbox WHERE status = 'parked'),
		(SELECT count(*) FROM ap_relationships WHERE kind = 'follower' AND status = 'accepted'),
		(SELECT count(*) FROM ap_relationships WHERE kind = 'following' AND status = 'accepted')`

	qActorCacheUpsert = `INSERT INTO ap_actors (iri, inbox, outbox, key_id, key_pem, document, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (iri) DO UPDATE SET inbox = EXCLUDED.inbox, outbox = EXCLUDED.outbox, key_id = EXCLUDED.key_id,
			key_pem = EXCLUDED.key_pem, document = EXCLUDED.document, fetched_at = EXCLUDED.fetched_at`
	qActorCacheColumns = `iri, inbox, outbox, key_id, key_pem, document, fetched_at`
	qActorCacheGet     = `SELECT ` + qActorCacheColumns + ` FROM ap_actors WHERE iri = $1`

	qRelationshipColumns = `kind, actor, status, activity_id, created_at, updated_at`
	qRelationshipUpsert  = `INSERT INTO ap_relationships (kind, actor, status, activity_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, actor) DO UPDATE SET status = EXCLUDED.status, activity_id = EXCLUDED.activity_id,
			updated_at = now()`
	// qRelationshipAnswer reads the relationship as it was (locked, so that a concurrent answer
	// waits and then sees this one's answered_at) and upserts it; it returns whether to answer.
	// $5 the interval in microseconds, $6 the clock (NULL: the database's).
	qRelationshipAnswer = `WITH clock AS (SELECT COALESCE($6::timestamptz, now()) AS now),
		old AS (SELECT status, answered_at FROM ap_relationships WHERE kind = $1 AND actor = $2 FOR UPDATE),
		answer AS (SELECT NOT EXISTS (SELECT 1 FROM old, clock WHERE old.status = $3 AND old.answered_at IS NOT NULL
			AND old.answered_at + $5::bigint * interval '1 microsecond' > clock.now) AS yes)
		INSERT INTO ap_relationships (kind, actor, status, activity_id, created_at, updated_at, answered_at)
		SELECT $1, $2, $3, $4, clock.now, clock.now, clock.now FROM clock
		ON CONFLICT (kind, actor) DO UPDATE SET status = EXCLUDED.status, activity_id = EXCLUDED.activity_id,
			updated_at = EXCLUDED.updated_at,
			answered_at = CASE WHEN (SELECT yes FROM answer) THEN EXCLUDED.answered_at ELSE ap_relationships.answered_at END
		RETURNING (SELECT yes FROM answer)`
	qRelationshipSetStatus = `UPDATE ap_relationships SET status = $4, updated_at = now()
		WHERE kind = $1 AND actor = $2 AND activity_id = $3 RETURNING ` + qRelationshipColumns
	qRelationshipGet    = `SELECT ` + qRelationshipColumns + ` FROM ap_relationships WHERE kind = $1 AND actor = $2`
	qRelationshipDelete = `DELETE FROM ap_relationships WHERE kind = $1 AND actor = $2`
	qRelationshipList   = `SELECT ` + qRelationshipColumns + ` FROM ap_relationships
		WHERE kind = $1 AND ($2 = '' OR status = $2) ORDER BY seq OFFSET $3 LIMIT $4`
	qRelationshipCount = `SELECT count(*) FROM ap_relationships WHERE kind = $1 AND ($2 = '' OR status = $2)`

	qAcceptListInsert   = `INSERT INTO ap_accept_list (type, actor) VALUES ($1, $2) ON CONFLICT DO NOTHING`
	qAcceptListDelete   = `DELETE FROM ap_accept_list WHERE type = $1 AND actor = $2`
	qAcceptListContains = `SELECT EXISTS (SELECT 1 FROM ap_accept_list WHERE type = $1 AND actor = $2)`
	qAcceptListList     = `SELECT type, actor, created_at FROM ap_accept_list WHERE $1 = '' OR type = $1 ORDER BY type, actor`

	qSyncPositionGet = `SELECT position FROM ap_sync_positions WHERE source = $1`
	qSyncPositionSet = `INSERT INTO ap_sync_positions (source, position) VALUES ($1, $2)
		ON CONFLICT (source) DO UPDATE SET position = EXCLUDED.position, updated_at = now()`
)
