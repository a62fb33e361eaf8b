package sqlitestore

// SQL of task permits and expiry. The database clock is this process's clock, passed in as
// Unix microseconds (an embedded store has one instance, so there is no other clock to agree
// with).

const (
	qTaskPermitColumns = `task_id, holder, previous_holder, term, status, updated_at, run_started_at, last_run_at`

	// qTaskPermitAcquire: ?1 task, ?2 holder, ?3 term the holder believes it holds, ?4 now,
	// ?5 stale-after in microseconds. Same rules as pgstore's: insert, renew (same holder and
	// term: term and status kept) or take over (term + 1, status idle); no row returned when
	// the permit is someone else's and fresh. The right-hand sides read the row as it was.
	qTaskPermitAcquire = `INSERT INTO task_permits AS p (task_id, holder, previous_holder, term, status, updated_at)
		VALUES (?1, ?2, '', 1, 'idle', ?4)
		ON CONFLICT (task_id) DO UPDATE SET
			holder = excluded.holder,
			previous_holder = CASE WHEN p.holder = excluded.holder AND p.term = ?3
				THEN p.previous_holder ELSE p.holder END,
			term = CASE WHEN p.holder = excluded.holder AND p.term = ?3 THEN p.term ELSE p.term + 1 END,
			status = CASE WHEN p.holder = excluded.holder AND p.term = ?3 THEN p.status ELSE 'idle' END,
			updated_at = excluded.updated_at
		WHERE p.holder = excluded.holder OR p.holder = '' OR p.updated_at < excluded.updated_at - ?5
		RETURNING ` + qTaskPermitColumns

	// qTaskPermitStart: ?1 task, ?2 holder, ?3 term, ?4 now, ?5 interval in microseconds.
	qTaskPermitStart = `UPDATE task_permits SET status = 'running', updated_at = ?4, run_started_at = ?4
		WHERE task_id = ?1 AND holder = ?2 AND term = ?3 AND status = 'idle'
			AND (last_run_at IS NULL OR last_run_at <= ?4 - ?5)
		RETURNING ` + qTaskPermitColumns

	// The fenced writes: ?1 task, ?2 holder, ?3 term, ?4 now.
	qTaskPermitRefresh = `UPDATE task_permits SET updated_at = ?4
		WHERE task_id = ?1 AND holder = ?2 AND term = ?3 AND status = 'running'`
	qTaskPermitFinish = `UPDATE task_permits SET status = 'idle',
			last_run_at = CASE WHEN status = 'running' THEN ?4 ELSE last_run_at END, updated_at = ?4
		WHERE task_id = ?1 AND holder = ?2 AND term = ?3`
	qTaskPermitRelease = `UPDATE task_permits SET holder = '', previous_holder = holder, status = 'idle', updated_at = ?4
		WHERE task_id = ?1 AND holder = ?2 AND term = ?3`

	qTaskPermitGet = `SELECT ` + qTaskPermitColumns + ` FROM task_permits WHERE task_id = ?`

	// qExpiredDelete is completed with the quoted table (%[1]s) and column (%[2]s), which come
	// from code and are checked by store.CheckExpiryTable. ?1 now, ?2 limit.
	qExpiredDelete = `DELETE FROM %[1]s WHERE rowid IN (SELECT rowid FROM %[1]s WHERE %[2]s <= ?1 LIMIT ?2)`

	// Parking expired operations takes three statements in one write transaction: pick the
	// ids, copy the rows to dead_letters, delete them. ?1 is a JSON array of ids.
	qOpQueueExpiredIDs = `SELECT id FROM op_queue WHERE expires_at <= ? ORDER BY expires_at, id LIMIT ?`
	qOpQueueParkCopy   = `INSERT INTO dead_letters (kind, ref, topic, payload, reason, attempts, history, created_at)
		SELECT ?2, op_id, '', request, ?3, attempts,
			json_insert(history, '$[#]', printf('expired at %s (queued at %s by instance %s)',
				strftime('%Y-%m-%dT%H:%M:%SZ', expires_at / 1000000, 'unixepoch'),
				strftime('%Y-%m-%dT%H:%M:%SZ', enqueued_at / 1000000, 'unixepoch'), instance_id)),
			?4
		FROM op_queue WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id
		RETURNING ref`
	qOpQueueParkDelete = `DELETE FROM op_queue WHERE id IN (SELECT value FROM json_each(?1))`
)
