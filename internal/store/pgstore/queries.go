package pgstore

// All SQL of the PostgreSQL backend lives in this file.

const (
	qNow = `SELECT clock_timestamp()`

	// The advisory lock serialises migrations of one schema across instances starting together.
	qMigrationsLock      = `SELECT pg_advisory_xact_lock(hashtext('anchord_migrations:' || current_schema()))`
	qMigrationsBootstrap = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER     PRIMARY KEY,
		name       TEXT        NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`
	qMigrationList   = `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`
	qMigrationInsert = `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`

	qSettingGet    = `SELECT value FROM settings WHERE name = $1`
	qSettingInsert = `INSERT INTO settings (name, value) VALUES ($1, $2)`
	// created_at keeps the first write: the table has no column for the last one.
	qSettingPut = `INSERT INTO settings (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`
)

const (
	qOpQueueUpsert = `INSERT INTO op_queue
		(op_id, suffix, op_type, request, instance_id, attempts, history, available_at, expires_at)
		SELECT t.op_id, t.suffix, t.op_type, t.request, t.instance_id, t.attempts, t.history::jsonb,
			COALESCE(t.available_at, now()), now() + t.lifespan_us * interval '1 microsecond'
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[], $6::int[], $7::text[],
			$8::timestamptz[], $9::bigint[])
			AS t(op_id, suffix, op_type, request, instance_id, attempts, history, available_at, lifespan_us)
		ON CONFLICT (op_id) DO UPDATE SET
			instance_id = excluded.instance_id, attempts = excluded.attempts, history = excluded.history,
			available_at = excluded.available_at, expires_at = excluded.expires_at
		RETURNING id, op_id`
	qOpQueueList = `SELECT id, op_id, suffix, op_type, request, instance_id, attempts, history,
		enqueued_at, available_at, expires_at
		FROM op_queue WHERE instance_id = $1 AND id > $2 ORDER BY id LIMIT $3`
	qOpQueueDelete = `DELETE FROM op_queue WHERE id = ANY($1) AND instance_id = $2`
	qOpQueueRetry  = `UPDATE op_queue SET attempts = $1, history = $2, available_at = $3
		WHERE id = $4 AND instance_id = $5`

	qDeadLetterInsert = `INSERT INTO dead_letters (kind, ref, topic, payload, reason, attempts, history)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`
	qDeadLetterColumns = `id, kind, ref, topic, payload, reason, attempts, history, created_at`
	qDeadLetterList    = `SELECT ` + qDeadLetterColumns + ` FROM dead_letters
		WHERE ($1 = '' OR kind = $1) AND id > $2 ORDER BY id LIMIT $3`
	qDeadLetterGet    = `SELECT ` + qDeadLetterColumns + ` FROM dead_letters WHERE id = $1`
	qDeadLetterDelete = `DELETE FROM dead_letters WHERE id = $1`
	// qDeadLetterCountByKind walks the (kind, id) index.
	qDeadLetterCountByKind = `SELECT kind, COUNT(*) FROM dead_letters GROUP BY kind`

	// qCASPut gives content stored before its digest was kept (migration 27) its digest when it
	// is stored again: a batch file another domain names by its hash is then found by it.
	qCASPut = `INSERT INTO cas_objects (cid, data, size, sha256) VALUES ($1, $2, $3, $4)
		ON CONFLICT (cid) DO UPDATE SET sha256 = excluded.sha256 WHERE cas_objects.sha256 IS NULL`
	qCASGet = `SELECT data FROM cas_objects WHERE cid = $1`
	// qCASGetBySHA256: two CIDs (v0 and v1) may hold the same bytes; either will do.
	qCASGetBySHA256    = `SELECT data FROM cas_objects WHERE sha256 = $1 LIMIT 1`
	qCASExistsBySHA256 = `SELECT EXISTS (SELECT 1 FROM cas_objects WHERE sha256 = $1)`

	qAnchorColumns = `seq, anchor_string, core_index_cid, op_count, backend, status, record, signature,
		error, created_at, completed_at, observed_at, origin, hashlink, published_at, issued_at`
	qAnchorInsert = `INSERT INTO anchors
		(anchor_string, core_index_cid, op_count, backend, status, record, signature, completed_at,
		observed_at, origin, hashlink, issued_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $5 = 'completed' THEN now() END,
		CASE WHEN $8 THEN now() END, NULLIF($9, ''), NULLIF($10, ''), NULLIF($11::bigint, 0))
		RETURNING ` + qAnchorColumns
	qAnchorGet        = `SELECT ` + qAnchorColumns + ` FROM anchors WHERE seq = $1`
	qAnchorList       = `SELECT ` + qAnchorColumns + ` FROM anchors WHERE seq > $1 ORDER BY seq LIMIT $2`
	qAnchorListLatest = `SELECT ` + qAnchorColumns + ` FROM anchors WHERE seq < $1 ORDER BY seq DESC LIMIT $2`
	// SKIP LOCKED: concurrent observers (one per instance) each take a different anchor.
	qAnchorNextToObserve = `SELECT ` + qAnchorColumns + ` FROM anchors
		WHERE status = 'completed' AND observed_at IS NULL ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED`
	qAnchorMarkObserved = `UPDATE anchors SET observed_at = now()
		WHERE seq = $1 AND status = 'completed' AND observed_at IS NULL`

	// The request is not kept (store.DIDOperation.Request): the empty value is the varlena's
	// one-byte header, and rows written before hold theirs as they were.
	qDIDOperationInsert = `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request)
		SELECT s, a, i, t, ''::bytea FROM unnest($1::text[], $2::bigint[], $3::int[], $4::text[]) AS u (s, a, i, t)
		ON CONFLICT DO NOTHING`
	qDIDOperationList = `SELECT d.suffix, d.anchor_seq, d.op_index, d.op_type, d.request,
		COALESCE(a.origin, ''), COALESCE(a.anchor_string, ''), COALESCE(a.issued_at, 0)
		FROM did_operations d LEFT JOIN anchors a ON a.seq = d.anchor_seq
		WHERE d.suffix = $1 ORDER BY d.anchor_seq, d.op_index`
	qDIDOperationLists = `SELECT d.suffix, d.anchor_seq, d.op_index, d.op_type, d.request,
		COALESCE(a.origin, ''), COALESCE(a.anchor_string, ''), COALESCE(a.issued_at, 0)
		FROM did_operations d LEFT JOIN anchors a ON a.seq = d.anchor_seq
		WHERE d.suffix = ANY($1) ORDER BY d.suffix, d.anchor_seq, d.op_index`
	qDIDLastAnchors = `SELECT suffix, max(anchor_seq) FROM did_operations WHERE suffix = ANY($1) GROUP BY suffix`
)

const (
	qOpQueueTaskTouch = `INSERT INTO op_queue_tasks (instance_id) VALUES ($1)
		ON CONFLICT (instance_id) DO UPDATE SET updated_at = now()`
	qOpQueueTaskDelete = `DELETE FROM op_queue_tasks WHERE instance_id = $1`
	// FOR SHARE: a concurrent take-over (DELETE) waits for this transaction, and this one waits
	// for a take-over already under way and then finds no row.
	qOpQueueTaskCheck    = `SELECT 1 FROM op_queue_tasks WHERE instance_id = $1 FOR SHARE`
	qOpQueueTaskTakeOver = `DELETE FROM op_queue_tasks
		WHERE updated_at < now() - $1 * interval '1 microsecond' AND instance_id <> $2 RETURNING instance_id`
	qOpQueueOrphans = `SELECT id, op_id, suffix, op_type, request, instance_id, attempts, history,
		enqueued_at, available_at, expires_at
		FROM op_queue q WHERE q.instance_id <> $2
		AND NOT EXISTS (SELECT 1 FROM op_queue_tasks t WHERE t.instance_id = q.instance_id)
		ORDER BY id LIMIT $1`
)

const (
	qAnchoredOpsInsert = `INSERT INTO anchored_ops (op_id, anchor_seq, expires_at)
		SELECT unnest($1::text[]), $2, now() + $3 * interval '1 microsecond'`
	qAnchoredOpsFilter = `SELECT op_id FROM anchored_ops WHERE op_id = ANY($1)`
)

const (
	qAnchorClockGet = `SELECT last_at, written_at FROM anchor_clock WHERE id = 1 FOR UPDATE`
	qAnchorClockSet = `UPDATE anchor_clock SET last_at = $1, written_at = $2 WHERE id = 1`
)

const qOpQueueTaskRefresh = `UPDATE op_queue_tasks SET updated_at = now() WHERE instance_id = $1`

const qOpQueueOwned = `SELECT id FROM op_queue WHERE instance_id = $1 AND id = ANY($2)`

const qAnchoredOpsDeleteByAnchor = `DELETE FROM anchored_ops WHERE op_id = ANY($2) AND anchor_seq = $1`

const qDIDSuffixList = `SELECT DISTINCT suffix FROM did_operations WHERE suffix > $1 ORDER BY suffix LIMIT $2`

const (
	// FOR UPDATE without SKIP LOCKED: publishers take turns on the lowest anchor, because each
	// anchor's hashlink depends on those published before it.
	qAnchorNextToPublish = `SELECT ` + qAnchorColumns + ` FROM anchors
		WHERE origin IS NULL AND published_at IS NULL AND status <> 'failed'
			AND NOT (backend = 'witness' AND status = 'pending') ORDER BY seq LIMIT 1 FOR UPDATE`
	qAnchorMarkPublished = `UPDATE anchors SET hashlink = $1, published_at = now()
		WHERE seq = $2 AND origin IS NULL AND published_at IS NULL`
	qAnchorsByHashlink = `SELECT hashlink, seq FROM anchors WHERE hashlink = ANY($1)`
	qDIDLatestAnchors  = `SELECT m.suffix, a.seq, COALESCE(a.hashlink, '')
		FROM (SELECT suffix, max(anchor_seq) AS seq FROM did_operations
			WHERE suffix = ANY($1) AND anchor_seq < $2 GROUP BY suffix) m
		JOIN anchors a ON a.seq = m.seq`

	qWaitingAnchorInsert = `INSERT INTO waiting_anchors (hashlink, origin, sender, live, waiting_for, event)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (hashlink) DO NOTHING`
	qWaitingAnchorReady = `SELECT w.hashlink, w.origin, w.sender, w.live, w.waiting_for, w.event, w.created_at
		FROM waiting_anchors w WHERE EXISTS (SELECT 1 FROM anchors a WHERE a.hashlink = w.waiting_for)
		ORDER BY w.created_at, w.hashlink LIMIT $1`
	qWaitingAnchorUpdate = `UPDATE waiting_anchors SET waiting_for = $1 WHERE hashlink = $2`
	qWaitingAnchorDelete = `DELETE FROM waiting_anchors WHERE hashlink = $1`
	qWaitingAnchorCount  = `SELECT count(*) FROM waiting_anchors WHERE $1 = '' OR origin = $1`
)

const (
	qDIDStateGet     = `SELECT state FROM did_states WHERE suffix = $1`
	qDIDStateGetMany = `SELECT suffix, state FROM did_states WHERE suffix = ANY($1)`
	// The rows go in in the order given (sorted by suffix, bytewise) and are locked in the same
	// order: two transactions that share DIDs then wait for each other in one order only.
	qDIDStateInsert = `INSERT INTO did_states (suffix, state, positions)
		SELECT s, st, p FROM unnest($1::text[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS t(s, st, p, n) ORDER BY n
		ON CONFLICT DO NOTHING RETURNING suffix`
	qDIDStateLock = `SELECT suffix, state FROM did_states WHERE suffix = ANY($1)
		ORDER BY suffix COLLATE "C" FOR UPDATE`
	qDIDStatePut = `INSERT INTO did_states (suffix, state, positions)
		SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])
		ON CONFLICT (suffix) DO UPDATE SET state = EXCLUDED.state, positions = EXCLUDED.positions`
)
