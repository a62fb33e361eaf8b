package pgstore

// SQL of task permits and expiry. Every time is the database clock: clock_timestamp(), the
// time at which the statement runs (now() would be the start of an enclosing transaction),
// unless a test passes its own (the COALESCE).

const (
	qTaskPermitColumns = `task_id, holder, previous_holder, term, status, updated_at, run_started_at, last_run_at`

	// qTaskPermitAcquire: $1 task, $2 holder, $3 term the holder believes it holds, $4 now,
	// $5 stale-after in microseconds. One statement: it inserts, renews (same holder and term:
	// term and status kept) or takes over (another or no holder, or a new incarnation of this
	// one: term + 1, status idle), and returns no row when the permit is someone else's and
	// fresh. Concurrent inserts of a missing row serialise on the primary key; the loser
	// re-evaluates the WHERE against the winner's fresh row and gets nothing.
	qTaskPermitAcquire = `INSERT INTO task_permits AS p (task_id, holder, term, status, updated_at)
		VALUES ($1, $2, 1, 'idle', COALESCE($4::timestamptz, clock_timestamp()))
		ON CONFLICT (task_id) DO UPDATE SET
			holder = excluded.holder,
			previous_holder = CASE WHEN p.holder = excluded.holder AND p.term = $3::bigint
				THEN p.previous_holder ELSE p.holder END,
			term = CASE WHEN p.holder = excluded.holder AND p.term = $3::bigint THEN p.term ELSE p.term + 1 END,
			status = CASE WHEN p.holder = excluded.holder AND p.term = $3::bigint THEN p.status ELSE 'idle' END,
			updated_at = excluded.updated_at
		WHERE p.holder = excluded.holder OR p.holder = ''
			OR p.updated_at < excluded.updated_at - $5::bigint * interval '1 microsecond'
		RETURNING ` + qTaskPermitColumns

	// qTaskPermitStart: $1 task, $2 holder, $3 term, $4 now, $5 interval in microseconds.
	qTaskPermitStart = `UPDATE task_permits
		SET status = 'running', updated_at = COALESCE($4::timestamptz, clock_timestamp()),
			run_started_at = COALESCE($4::timestamptz, clock_timestamp())
		WHERE task_id = $1 AND holder = $2 AND term = $3 AND status = 'idle'
			AND (last_run_at IS NULL
				OR last_run_at <= COALESCE($4::timestamptz, clock_timestamp()) - $5::bigint * interval '1 microsecond')
		RETURNING ` + qTaskPermitColumns

	// The fenced writes: $1 task, $2 holder, $3 term, $4 now.
	qTaskPermitRefresh = `UPDATE task_permits SET updated_at = COALESCE($4::timestamptz, clock_timestamp())
		WHERE task_id = $1 AND holder = $2 AND term = $3 AND status = 'running'`
	qTaskPermitFinish = `UPDATE task_permits SET status = 'idle',
			last_run_at = CASE WHEN status = 'running' THEN COALESCE($4::timestamptz, clock_timestamp()) ELSE last_run_at END,
			updated_at = COALESCE($4::timestamptz, clock_timestamp())
		WHERE task_id = $1 AND holder = $2 AND term = $3`
	qTaskPermitRelease = `UPDATE task_permits SET holder = '', previous_holder = holder, status = 'idle',
			updated_at = COALESCE($4::timestamptz, clock_timestamp())
		WHERE task_id = $1 AND holder = $2 AND term = $3`

	qTaskPermitGet = `SELECT ` + qTaskPermitColumns + ` FROM task_permits WHERE task_id = $1`

	// qExpiredDelete is completed with the quoted table (%[1]s) and column (%[2]s), which come
	// from code and are checked by validIdentifier. $1 limit, $2 now. The rows are locked by the
	// inner SELECT (skipping rows other transactions hold), so their ctid cannot change before
	// the DELETE reaches them.
	qExpiredDelete = `DELETE FROM %[1]s WHERE ctid = ANY(ARRAY(
		SELECT ctid FROM %[1]s WHERE %[2]s <= COALESCE($2::timestamptz, clock_timestamp())
		LIMIT $1 FOR UPDATE SKIP LOCKED))`

	// qOpQueueParkExpired moves expired operations to dead_letters in one statement (so in one
	// transaction): $1 limit, $2 now, $3 kind, $4 reason. Rows locked by an anchor's Ack in
	// flight are skipped: the operation is then either anchored or parked at the next run.
	qOpQueueParkExpired = `WITH expired AS (
			DELETE FROM op_queue WHERE id = ANY(ARRAY(
				SELECT id FROM op_queue WHERE expires_at <= COALESCE($2::timestamptz, clock_timestamp())
				ORDER BY expires_at, id LIMIT $1 FOR UPDATE SKIP LOCKED))
			RETURNING id, op_id, request, instance_id, attempts, history, enqueued_at, expires_at)
		INSERT INTO dead_letters (kind, ref, topic, payload, reason, attempts, history)
		SELECT $3, op_id, '', request, $4, attempts,
			history || jsonb_build_array(format('expired at %s (queued at %s by instance %s)',
				to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
				to_char(enqueued_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), instance_id))
		FROM expired ORDER BY id
		RETURNING ref`
)
