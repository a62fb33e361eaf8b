package sqlitestore

// SQL of the ActivityPub service (ap_* tables). Times are Unix microseconds passed by the caller
// (this process's clock is the database clock).

const (
	// Parameters: activity id, type, body, public, public (again), created_at.
	qActivityOutboxInsert = `INSERT INTO ap_outbox (activity_id, type, body, public, position, created_at)
		VALUES (?, ?, ?, ?, CASE WHEN ? THEN (SELECT COALESCE(max(position), 0) + 1 FROM ap_outbox) END, ?)
		RETURNING seq, COALESCE(position, 0)`
	// Parameters: outbox seq, recipient, next_attempt_at, created_at.
	qActivityDeliveryInsert = `INSERT INTO ap_deliveries (outbox_seq, recipient, next_attempt_at, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (outbox_seq, recipient) DO NOTHING`
	qActivityOutboxColumns     = `seq, activity_id, type, body, public, COALESCE(position, 0), created_at`
	qActivityOutboxGet         = `SELECT ` + qActivityOutboxColumns + ` FROM ap_outbox WHERE activity_id = ?`
	qActivityOutboxListPublic  = `SELECT ` + qActivityOutboxColumns + ` FROM ap_outbox WHERE position > ? AND position <= ? ORDER BY position`
	qActivityOutboxCountPublic = `SELECT COALESCE(max(position), 0) FROM ap_outbox`

	// The RETURNING subqueries read the activity of each claimed delivery.
	qActivityDeliveryColumns = `id, outbox_seq, (SELECT o.activity_id FROM ap_outbox o WHERE o.seq = outbox_seq),
		recipient, status, attempts, next_attempt_at, last_error, history, COALESCE(claim_owner, ''), claim_term,
		created_at, delivered_at`
	// qActivityDeliveryClaim claims in one statement, which SQLite runs as one write transaction
	// on the store's single writer connection. SET expressions see the old row: a claim_owner
	// still set means the previous claim expired without an outcome, which counts as an attempt.
	// Parameters: owner, claim_expires, history stamp, now, now, limit.
	qActivityDeliveryClaim = `UPDATE ap_deliveries SET
			claim_owner = ?,
			claim_term = claim_term + 1,
			claim_expires = ?,
			attempts = attempts + (claim_owner IS NOT NULL),
			history = CASE WHEN claim_owner IS NULL THEN history
				ELSE json_insert(history, '$[#]', ? || ' claim of ' || claim_owner || ' (term ' || claim_term ||
					') expired without an outcome') END
		WHERE id IN (
			SELECT id FROM ap_deliveries
			WHERE status = 'pending' AND next_attempt_at <= ? AND (claim_expires IS NULL OR claim_expires < ?)
			ORDER BY next_attempt_at
			LIMIT ?)
		RETURNING ` + qActivityDeliveryColumns + `, (SELECT o.body FROM ap_outbox o WHERE o.seq = outbox_seq)`

	// The fenced outcomes end with: id, claim owner, claim term.
	qActivityDeliveryFence = ` WHERE id = ? AND claim_owner = ? AND claim_term = ? AND status = 'pending'`
	// Parameters: delivered_at, expires_at, fence.
	qActivityDeliveryComplete = `UPDATE ap_deliveries SET status = 'delivered', attempts = attempts + 1,
		delivered_at = ?, expires_at = ?, claim_owner = NULL, claim_expires = NULL, last_error = ''` + qActivityDeliveryFence
	// Parameters: next_attempt_at, error, history line, fence.
	qActivityDeliveryRetry = `UPDATE ap_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?,
		history = json_insert(history, '$[#]', ?), claim_owner = NULL, claim_expires = NULL` + qActivityDeliveryFence
	// Parameters: error, history line, fence.
	qActivityDeliveryPark = `UPDATE ap_deliveries SET status = 'parked', attempts = attempts + 1, last_error = ?,
		history = json_insert(history, '$[#]', ?), claim_owner = NULL, claim_expires = NULL` + qActivityDeliveryFence
	// Parameters: next_attempt_at, history line, id.
	qActivityDeliveryRearm = `UPDATE ap_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?,
		claim_owner = NULL, claim_expires = NULL, history = json_insert(history, '$[#]', ?)
		WHERE id = ? AND status = 'parked'`
	qActivityDeliveryGet            = `SELECT ` + qActivityDeliveryColumns + ` FROM ap_deliveries WHERE id = ?`
	qActivityDeliveryListByActivity = `SELECT ` + qActivityDeliveryColumns + ` FROM ap_deliveries
		WHERE outbox_seq = (SELECT seq FROM ap_outbox WHERE activity_id = ?) ORDER BY id`
	qActivityInboxRelease    = `UPDATE ap_inbox SET claim_owner = NULL, claim_expires = NULL WHERE claim_owner = ?`
	qActivityDeliveryRelease = `UPDATE ap_deliveries SET claim_owner = NULL, claim_expires = NULL WHERE claim_owner = ?`
	qActivityDeliveryLatest  = `SELECT ` + qActivityDeliveryColumns + ` FROM ap_deliveries
		WHERE recipient = ? ORDER BY id DESC LIMIT 1`

	// Parameters: activity id, actor, from, type, body, source, next_attempt_at, received_at.
	qActivityInboxInsert = `INSERT INTO ap_inbox (activity_id, actor, from_actor, type, body, source, next_attempt_at,
		received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (activity_id) DO NOTHING RETURNING seq`
	qActivityInboxColumns = `seq, activity_id, actor, from_actor, type, body, source, status, attempts, next_attempt_at,
		last_error, history, COALESCE(claim_owner, ''), claim_term, received_at, done_at`
	// Parameters: owner, claim_expires, history stamp, now, now, limit.
	qActivityInboxClaim = `UPDATE ap_inbox SET
			claim_owner = ?,
			claim_term = claim_term + 1,
			claim_expires = ?,
			attempts = attempts + (claim_owner IS NOT NULL),
			history = CASE WHEN claim_owner IS NULL THEN history
				ELSE json_insert(history, '$[#]', ? || ' claim of ' || claim_owner || ' (term ' || claim_term ||
					') expired without an outcome') END
		WHERE seq IN (
			SELECT seq FROM ap_inbox
			WHERE status = 'queued' AND next_attempt_at <= ? AND (claim_expires IS NULL OR claim_expires < ?)
			ORDER BY next_attempt_at, seq
			LIMIT ?)
		RETURNING ` + qActivityInboxColumns
	qActivityInboxFence = ` WHERE seq = ? AND claim_owner = ? AND claim_term = ? AND status = 'queued'`
	// Parameters: done_at, expires_at (NULL: kept), fence.
	qActivityInboxComplete = `UPDATE ap_inbox SET status = 'done', attempts = attempts + 1, done_at = ?, expires_at = ?,
		claim_owner = NULL, claim_expires = NULL, last_error = ''` + qActivityInboxFence
	// Parameters: next_attempt_at, error, history line, fence.
	qActivityInboxRetry = `UPDATE ap_inbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?,
		history = json_insert(history, '$[#]', ?), claim_owner = NULL, claim_expires = NULL` + qActivityInboxFence
	// Parameters: error, history line, fence.
	qActivityInboxPark = `UPDATE ap_inbox SET status = 'parked', attempts = attempts + 1, last_error = ?,
		history = json_insert(history, '$[#]', ?), claim_owner = NULL, claim_expires = NULL` + qActivityInboxFence
	// Parameters: next_attempt_at, history line, seq.
	qActivityInboxRearm = `UPDATE ap_inbox SET status = 'queued', attempts = 0, next_attempt_at = ?,
		claim_owner = NULL, claim_expires = NULL, history = json_insert(history, '$[#]', ?)
		WHERE seq = ? AND status = 'parked'`
	qActivityInboxGet           = `SELECT ` + qActivityInboxColumns + ` FROM ap_inbox WHERE seq = ?`
	qActivityInboxGetByActivity = `SELECT ` + qActivityInboxColumns + ` FROM ap_inbox WHERE activity_id = ?`
	// Parameters: after, after + limit.
	qActivityInboxList    = `SELECT ` + qActivityInboxColumns + ` FROM ap_inbox WHERE seq > ? AND seq <= ? ORDER BY seq`
	qActivityInboxLastSeq = `SELECT COALESCE(max(seq), 0) FROM ap_inbox`

	qActivityCounts = `SELECT
		(SELECT count(*) FROM ap_deliveries WHERE status = 'pending'),
		(SELECT count(*) FROM ap_deliveries WHERE status = 'parked'),
		(SELECT count(*) FROM ap_inbox WHERE status = 'queued'),
		(SELECT count(*) FROM ap_inbox WHERE status = 'parked'),
		(SELECT count(*) FROM ap_relationships WHERE kind = 'follower' AND status = 'accepted'),
		(SELECT count(*) FROM ap_relationships WHERE kind = 'following' AND status = 'accepted')`

	qActorCacheUpsert = `INSERT INTO ap_actors (iri, inbox, outbox, key_id, key_pem, document, fetched_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (iri) DO UPDATE SET inbox = excluded.inbox, outbox = excluded.outbox, key_id = excluded.key_id,
			key_pem = excluded.key_pem, document = excluded.document, fetched_at = excluded.fetched_at`
	qActorCacheColumns = `iri, inbox, outbox, key_id, key_pem, document, fetched_at`
	qActorCacheGet     = `SELECT ` + qActorCacheColumns + ` FROM ap_actors WHERE iri = ?`

	qRelationshipColumns = `kind, actor, status, activity_id, created_at, updated_at`
	// Parameters: kind, actor, status, activity id, created_at, updated_at. The upsert keeps the
	// rowid, which orders the collections.
	qRelationshipUpsert = `INSERT INTO ap_relationships (kind, actor, status, activity_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (kind, actor) DO UPDATE SET status = excluded.status, activity_id = excluded.activity_id,
			updated_at = excluded.updated_at`
	// Parameters: kind, actor.
	qRelationshipAnswered = `SELECT status, answered_at FROM ap_relationships WHERE kind = ? AND actor = ?`
	// Parameters: kind, actor, status, activity id, now (created_at, updated_at, answered_at),
	// answered: 1 to set answered_at to now, 0 to keep it.
	qRelationshipAnswer = `INSERT INTO ap_relationships (kind, actor, status, activity_id, created_at, updated_at, answered_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5)
		ON CONFLICT (kind, actor) DO UPDATE SET status = excluded.status, activity_id = excluded.activity_id,
			updated_at = excluded.updated_at, answered_at = CASE WHEN ?6 THEN excluded.answered_at ELSE answered_at END`
	// Parameters: status, updated_at, kind, actor, activity id.
	qRelationshipSetStatus = `UPDATE ap_relationships SET status = ?, updated_at = ?
		WHERE kind = ? AND actor = ? AND activity_id = ? RETURNING ` + qRelationshipColumns
	qRelationshipGet    = `SELECT ` + qRelationshipColumns + ` FROM ap_relationships WHERE kind = ? AND actor = ?`
	qRelationshipDelete = `DELETE FROM ap_relationships WHERE kind = ? AND actor = ?`
	// Parameters: kind, status, status, limit, offset.
	qRelationshipList = `SELECT ` + qRelationshipColumns + ` FROM ap_relationships
		WHERE kind = ? AND (? = '' OR status = ?) ORDER BY rowid LIMIT ? OFFSET ?`
	// Parameters: kind, status, status.
	qRelationshipCount = `SELECT count(*) FROM ap_relationships WHERE kind = ? AND (? = '' OR status = ?)`

	qAcceptListInsert   = `INSERT INTO ap_accept_list (type, actor, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
	qAcceptListDelete   = `DELETE FROM ap_accept_list WHERE type = ? AND actor = ?`
	qAcceptListContains = `SELECT EXISTS (SELECT 1 FROM ap_accept_list WHERE type = ? AND actor = ?)`
	// Parameters: type, type.
	qAcceptListList = `SELECT type, actor, created_at FROM ap_accept_list WHERE ? = '' OR type = ? ORDER BY type, actor`

	qSyncPositionGet = `SELECT position FROM ap_sync_positions WHERE source = ?`
	// Parameters: source, position, updated_at.
	qSyncPositionSet = `INSERT INTO ap_sync_positions (source, position, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (source) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`
)
