package sqlitestore

// SQL of the ledger anchoring backend (batches, transactions, transaction_receipts, ledger
// anchor transitions). Times are INTEGER Unix microseconds passed in by the caller: this
// process's clock is the database clock of an embedded store.

const (
	qLedgerBatchColumns = `header_signature, data_change_id, signer_public_key, trace, serialized_batch,
		submitted, submission_error, submission_error_message, dlt_status, claim_expires, created,
		service_id, anchor_seq, claim_owner, claim_term, attempts, next_attempt_at, maybe_submitted,
		history, submitted_at`

	qLedgerBatchColumnsNoBytes = `header_signature, data_change_id, signer_public_key, trace, '',
		submitted, submission_error, submission_error_message, dlt_status, claim_expires, created,
		service_id, anchor_seq, claim_owner, claim_term, attempts, next_attempt_at, maybe_submitted,
		history, submitted_at`

	qLedgerBatchInsert = `INSERT INTO batches (header_signature, data_change_id, signer_public_key, trace,
		serialized_batch, submitted, created, service_id, anchor_seq, next_attempt_at)
		VALUES (?, NULLIF(?, ''), ?, ?, ?, 0, ?, NULLIF(?, ''), ?, ?)`
	qLedgerTransactionInsert = `INSERT INTO transactions
		(header_signature, batch_id, family_name, family_version, signer_public_key)
		VALUES (?, ?, ?, ?, ?)`
	qLedgerBatchGet         = `SELECT ` + qLedgerBatchColumns + ` FROM batches WHERE header_signature = ?`
	qLedgerBatchGetByAnchor = `SELECT ` + qLedgerBatchColumns + ` FROM batches WHERE anchor_seq = ?`

	// qLedgerBatchClaim claims in one statement, which SQLite runs as one write transaction; the
	// store has one writer connection, so claimers are serialised. SET expressions see the old
	// row, so a claim_owner still set means the previous claim expired without an outcome.
	// Parameters: owner, claim_expires, history stamp, now, now, limit.
	qLedgerBatchClaim = `UPDATE batches SET
			claim_owner = ?,
			claim_term = claim_term + 1,
			claim_expires = ?,
			attempts = attempts + (claim_owner IS NOT NULL),
			maybe_submitted = (maybe_submitted OR claim_owner IS NOT NULL),
			history = CASE WHEN claim_owner IS NULL THEN history
				ELSE json_insert(history, '$[#]', ? || ' claim of ' || claim_owner || ' (term ' ||
					claim_term || ') expired without an outcome') END
		WHERE header_signature IN (
			SELECT header_signature FROM batches
			WHERE NOT submitted AND (claim_expires IS NULL OR claim_expires < ?) AND next_attempt_at <= ?
			ORDER BY next_attempt_at
			LIMIT ?)
		RETURNING ` + qLedgerBatchColumns

	// The fenced transitions end with: batch id, claim owner, claim term.
	qLedgerFence = ` WHERE header_signature = ? AND claim_owner = ? AND claim_term = ? AND NOT submitted`

	// Parameters: submitted_at, attempts increment, history, fence.
	qLedgerBatchMarkSubmitted = `UPDATE batches SET submitted = 1, dlt_status = 'PENDING', submitted_at = ?,
		submission_error = NULL, submission_error_message = NULL, claim_owner = NULL, claim_expires = NULL,
		maybe_submitted = 0, attempts = attempts + ?, history = ?` + qLedgerFence
	// Parameters: error, message, attempts increment, history, fence.
	qLedgerBatchMarkFailed = `UPDATE batches SET submitted = 1, submission_error = ?,
		submission_error_message = ?, claim_owner = NULL, claim_expires = NULL, maybe_submitted = 0,
		attempts = attempts + ?, history = ?` + qLedgerFence
	// Parameters: attempts increment, next_attempt_at, maybe_submitted, history, fence.
	qLedgerBatchRelinquish = `UPDATE batches SET claim_owner = NULL, claim_expires = NULL,
		attempts = attempts + ?, next_attempt_at = ?, maybe_submitted = ?, history = ?` + qLedgerFence

	qLedgerUnsettled = `submitted AND submission_error IS NULL
		AND (dlt_status IS NULL OR dlt_status NOT IN ('COMMITTED', 'INVALID'))`

	// The poller's listing leaves the serialized batch out: '' decodes to no bytes.
	qLedgerBatchListUnsettled = `SELECT ` + qLedgerBatchColumnsNoBytes + ` FROM batches
		WHERE ` + qLedgerUnsettled + ` AND header_signature > ? ORDER BY header_signature LIMIT ?`
	// Parameters: to, id, from.
	qLedgerBatchSetStatus = `UPDATE batches SET dlt_status = ?
		WHERE header_signature = ? AND ` + qLedgerUnsettled + ` AND COALESCE(dlt_status, '') = ?`
	// LedgerBatchCommitMany runs these per batch in one transaction. Parameters: id, from.
	qLedgerBatchCommit = `UPDATE batches SET dlt_status = 'COMMITTED'
		WHERE header_signature = ? AND ` + qLedgerUnsettled + ` AND COALESCE(dlt_status, '') = ?
		RETURNING anchor_seq`
	// Parameter: batch id.
	qLedgerCommitReceipts = `INSERT INTO transaction_receipts (transaction_id, result_valid, serialized_receipt, external_status)
		SELECT header_signature, 1, '', 'COMMITTED' FROM transactions WHERE batch_id = ?
		ON CONFLICT (transaction_id) DO NOTHING`
	// Parameters: completed_at, seq.
	qLedgerCommitAnchor = `UPDATE anchors SET status = 'completed', completed_at = ? WHERE seq = ? AND status = 'pending'`
	// Parameters: next_attempt_at, history, id, from.
	qLedgerBatchResubmit = `UPDATE batches SET submitted = 0, dlt_status = NULL, submitted_at = NULL,
		next_attempt_at = ?, claim_owner = NULL, claim_expires = NULL, maybe_submitted = 0, history = ?
		WHERE header_signature = ? AND ` + qLedgerUnsettled + ` AND COALESCE(dlt_status, '') = ?`
	// Parameter: now.
	qLedgerBatchCount = `SELECT
		count(*) FILTER (WHERE NOT submitted),
		count(*) FILTER (WHERE NOT submitted AND claim_expires >= ?),
		count(*) FILTER (WHERE ` + qLedgerUnsettled + `),
		count(*) FILTER (WHERE submission_error IS NULL AND dlt_status = 'COMMITTED'),
		count(*) FILTER (WHERE submission_error IS NULL AND dlt_status = 'INVALID'),
		count(*) FILTER (WHERE submitted AND submission_error IS NOT NULL)
		FROM batches`

	qLedgerTransactionList = `SELECT header_signature, batch_id, family_name, family_version, signer_public_key
		FROM transactions WHERE batch_id = ? ORDER BY header_signature`
	qLedgerReceiptInsert = `INSERT INTO transaction_receipts (transaction_id, result_valid, error_message,
		error_data, serialized_receipt, external_status, external_error_message)
		VALUES (?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, NULLIF(?, ''), NULLIF(?, ''))
		ON CONFLICT (transaction_id) DO NOTHING`
	qLedgerReceiptGet = `SELECT id, transaction_id, result_valid, COALESCE(error_message, ''),
		COALESCE(error_data, ''), serialized_receipt, COALESCE(external_status, ''),
		COALESCE(external_error_message, '')
		FROM transaction_receipts WHERE transaction_id = ?`

	// Parameters: completed_at, seq.
	qAnchorCompletePending = `UPDATE anchors SET status = 'completed', completed_at = ?
		WHERE seq = ? AND status = 'pending' RETURNING ` + qAnchorColumns
	// Parameters: error, seq.
	qAnchorFailPending = `UPDATE anchors SET status = 'failed', error = ?
		WHERE seq = ? AND status = 'pending' RETURNING ` + qAnchorColumns
)
