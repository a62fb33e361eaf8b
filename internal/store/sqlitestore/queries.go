package sqlitestore

// All SQL of the SQLite backend lives in this file. Times are stored as INTEGER Unix
// microseconds (UTC): comparisons are integer comparisons and no text parsing is involved.

const (
	// qNow reads SQLite's clock, which has whole milliseconds, and rounds away the tens of
	// microseconds the floating-point Julian day adds: a wait computed from two readings
	// (anchor.Writer.Wait, to the next whole second after the latest anchor) must end at or
	// after that moment by the next reading, which a reading a few microseconds off made it
	// miss by a millisecond.
	qNow = `SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER) * 1000`

	qMigrationsBootstrap = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	)`
	qMigrationList   = `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`
	qMigrationInsert = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
)

// The writer's synchronous setting around InTx's transactions (walSync).
const (
	qSynchronousNormal = `PRAGMA synchronous=NORMAL`
	qSynchronousFull   = `PRAGMA synchronous=FULL`
)

const (
	qSettingGet    = `SELECT value FROM settings WHERE name = ?`
	qSettingInsert = `INSERT INTO settings (name, value, created_at) VALUES (?, ?, ?)`
	// created_at keeps the first write: the table has no column for the last one.
	qSettingPut = `INSERT INTO settings (name, value, created_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`
)

const (
	qOpQueueUpsert = `INSERT INTO op_queue
		(op_id, suffix, op_type, request, instance_id, attempts, history, enqueued_at, available_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (op_id) DO UPDATE SET
			instance_id = excluded.instance_id, attempts = excluded.attempts, history = excluded.history,
			available_at = excluded.available_at, expires_at = excluded.expires_at
		RETURNING id`
	qOpQueueList = `SELECT id, op_id, suffix, op_type, request, instance_id, attempts, history,
		enqueued_at, available_at, expires_at
		FROM op_queue WHERE instance_id = ? AND id > ? ORDER BY id LIMIT ?`
	// qOpQueueDeleteIn is completed with one placeholder per id.
	qOpQueueDeleteIn = `DELETE FROM op_queue WHERE instance_id = ? AND id IN (%s)`
	qOpQueueRetry    = `UPDATE op_queue SET attempts = ?, history = ?, available_at = ?
		WHERE id = ? AND instance_id = ?`

	qDeadLetterInsert = `INSERT INTO dead_letters (kind, ref, topic, payload, reason, attempts, history, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	qDeadLetterColumns = `id, kind, ref, topic, payload, reason, attempts, history, created_at`
	qDeadLetterList    = `SELECT ` + qDeadLetterColumns + ` FROM dead_letters
		WHERE (? = '' OR kind = ?) AND id > ? ORDER BY id LIMIT ?`
	qDeadLetterGet    = `SELECT ` + qDeadLetterColumns + ` FROM dead_letters WHERE id = ?`
	qDeadLetterDelete = `DELETE FROM dead_letters WHERE id = ?`
	// qDeadLetterCountByKind walks the (kind, id) index.
	qDeadLetterCountByKind = `SELECT kind, COUNT(*) FROM dead_letters GROUP BY kind`

	// qCASPut gives content stored before its digest was kept (migration 27) its digest when it
	// is stored again: a batch file another domain names by its hash is then found by it.
	qCASPut = `INSERT INTO cas_objects (cid, data, size, created_at, sha256) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (cid) DO UPDATE SET sha256 = excluded.sha256 WHERE cas_objects.sha256 IS NULL`
	qCASGet = `SELECT data FROM cas_objects WHERE cid = ?`
	// qCASGetBySHA256: two CIDs (v0 and v1) may hold the same bytes; either will do.
	qCASGetBySHA256    = `SELECT data FROM cas_objects WHERE sha256 = ? LIMIT 1`
	qCASExistsBySHA256 = `SELECT EXISTS (SELECT 1 FROM cas_objects WHERE sha256 = ?)`

	qAnchorColumns = `seq, anchor_string, core_index_cid, op_count, backend, status, record, signature,
		error, created_at, completed_at, observed_at, origin, hashlink, published_at, issued_at`
	qAnchorInsert = `INSERT INTO anchors
		(anchor_string, core_index_cid, op_count, backend, status, record, signature, created_at, completed_at,
		observed_at, origin, hashlink, issued_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, 0)) RETURNING ` + qAnchorColumns
	qAnchorGet           = `SELECT ` + qAnchorColumns + ` FROM anchors WHERE seq = ?`
	qAnchorList          = `SELECT ` + qAnchorColumns + ` FROM anchors WHERE seq > ? ORDER BY seq LIMIT ?`
	qAnchorListLatest    = `SELECT ` + qAnchorColumns + ` FROM anchors WHERE seq < ? ORDER BY seq DESC LIMIT ?`
	qAnchorNextToObserve = `SELECT ` + qAnchorColumns + ` FROM anchors
		WHERE status = 'completed' AND observed_at IS NULL ORDER BY seq LIMIT 1`
	qAnchorMarkObserved = `UPDATE anchors SET observed_at = ?
		WHERE seq = ? AND status = 'completed' AND observed_at IS NULL`

	// qDIDOperationInsert is completed with one "(?, ?, ?, ?, x'')" per row. OR FAIL: a row
	// that breaks NOT NULL ends the statement without undoing the rows before it, so SQLite keeps
	// no statement journal (a copy of every page the statement changes, which was a quarter of the
	// observer's transaction); the caller's transaction is rolled back on any error anyway.
	//
	// The request is not kept (store.DIDOperation.Request): the empty value costs the record no
	// byte beyond its header's, and rows written before hold theirs as they were.
	qDIDOperationInsert = `INSERT OR FAIL INTO did_operations (suffix, anchor_seq, op_index, op_type, request)
		VALUES %s ON CONFLICT DO NOTHING`
	qDIDOperationList = `SELECT d.suffix, d.anchor_seq, d.op_index, d.op_type, d.request,
		COALESCE(a.origin, ''), COALESCE(a.anchor_string, ''), COALESCE(a.issued_at, 0)
		FROM did_operations d LEFT JOIN anchors a ON a.seq = d.anchor_seq
		WHERE d.suffix = ? ORDER BY d.anchor_seq, d.op_index`
	// qDIDLastAnchors is completed with one placeholder per suffix.
	qDIDLastAnchors = `SELECT suffix, MAX(anchor_seq) FROM did_operations WHERE suffix IN (%s) GROUP BY suffix`
)

const (
	qOpQueueTaskTouch = `INSERT INTO op_queue_tasks (instance_id, updated_at) VALUES (?, ?)
		ON CONFLICT (instance_id) DO UPDATE SET updated_at = excluded.updated_at`
	qOpQueueTaskDelete   = `DELETE FROM op_queue_tasks WHERE instance_id = ?`
	qOpQueueTaskCheck    = `SELECT 1 FROM op_queue_tasks WHERE instance_id = ?`
	qOpQueueTaskTakeOver = `DELETE FROM op_queue_tasks WHERE updated_at < ? AND instance_id <> ? RETURNING instance_id`
	qOpQueueOrphans      = `SELECT id, op_id, suffix, op_type, request, instance_id, attempts, history,
		enqueued_at, available_at, expires_at
		FROM op_queue q WHERE q.instance_id <> ?
		AND NOT EXISTS (SELECT 1 FROM op_queue_tasks t WHERE t.instance_id = q.instance_id)
		ORDER BY id LIMIT ?`
)

const (
	// qAnchoredOpInsert is completed with one "(?, ?, ?)" per row.
	qAnchoredOpInsert = `INSERT INTO anchored_ops (op_id, anchor_seq, expires_at) VALUES %s`
	// qAnchoredOpsFilter is completed with one placeholder per id.
	qAnchoredOpsFilter = `SELECT op_id FROM anchored_ops WHERE op_id IN (%s)`
)

const (
	qAnchorClockGet = `SELECT last_at, written_at FROM anchor_clock WHERE id = 1`
	qAnchorClockSet = `UPDATE anchor_clock SET last_at = ?, written_at = ? WHERE id = 1`
)

const qOpQueueTaskRefresh = `UPDATE op_queue_tasks SET updated_at = ? WHERE instance_id = ?`

// qOpQueueOwned is completed with one placeholder per id.
const qOpQueueOwned = `SELECT id FROM op_queue WHERE instance_id = ? AND id IN (%s)`

// qAnchoredOpsDeleteByAnchor is completed with one placeholder per id.
const qAnchoredOpsDeleteByAnchor = `DELETE FROM anchored_ops WHERE anchor_seq = ? AND op_id IN (%s)`

const qDIDSuffixList = `SELECT DISTINCT suffix FROM did_operations WHERE suffix > ? ORDER BY suffix LIMIT ?`

const (
	qAnchorNextToPublish = `SELECT ` + qAnchorColumns + ` FROM anchors
		WHERE origin IS NULL AND published_at IS NULL AND status <> 'failed'
			AND NOT (backend = 'witness' AND status = 'pending') ORDER BY seq LIMIT 1`
	qAnchorMarkPublished = `UPDATE anchors SET hashlink = ?, published_at = ?
		WHERE seq = ? AND origin IS NULL AND published_at IS NULL`
	// qAnchorsByHashlink is completed with one placeholder per hashlink.
	qAnchorsByHashlink = `SELECT hashlink, seq FROM anchors WHERE hashlink IN (%s)`
	// qDIDLatestAnchors is completed with one placeholder per suffix, then takes beforeSeq.
	qDIDLatestAnchors = `SELECT m.suffix, a.seq, COALESCE(a.hashlink, '')
		FROM (SELECT suffix, MAX(anchor_seq) AS seq FROM did_operations
			WHERE suffix IN (%s) AND anchor_seq < ? GROUP BY suffix) m
		JOIN anchors a ON a.seq = m.seq`

	qWaitingAnchorColumns = `hashlink, origin, sender, live, waiting_for, event, created_at`
	qWaitingAnchorInsert  = `INSERT INTO waiting_anchors (` + qWaitingAnchorColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hashlink) DO NOTHING`
	qWaitingAnchorReady = `SELECT w.hashlink, w.origin, w.sender, w.live, w.waiting_for, w.event, w.created_at
		FROM waiting_anchors w WHERE EXISTS (SELECT 1 FROM anchors a WHERE a.hashlink = w.waiting_for)
		ORDER BY w.created_at, w.hashlink LIMIT ?`
	qWaitingAnchorUpdate = `UPDATE waiting_anchors SET waiting_for = ? WHERE hashlink = ?`
	qWaitingAnchorDelete = `DELETE FROM waiting_anchors WHERE hashlink = ?`
	qWaitingAnchorCount  = `SELECT COUNT(*) FROM waiting_anchors WHERE ? = '' OR origin = ?`
)

const (
	qDIDStateGet = `SELECT state FROM did_states WHERE suffix = ?`
	// qDIDStateGetMany is completed with one placeholder per suffix.
	qDIDStateGetMany = `SELECT suffix, state FROM did_states WHERE suffix IN (%s)`
	// qDIDStateInsert and qDIDStatePut are completed with one "(?, ?, ?)" per row; OR FAIL as
	// in qDIDOperationInsert.
	qDIDStateInsert = `INSERT OR FAIL INTO did_states (suffix, state, positions) VALUES %s
		ON CONFLICT DO NOTHING RETURNING suffix`
	qDIDStatePut = `INSERT OR FAIL INTO did_states (suffix, state, positions) VALUES %s
		ON CONFLICT (suffix) DO UPDATE SET state = excluded.state, positions = excluded.positions`
)
