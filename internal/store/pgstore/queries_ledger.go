package pgstore

// SQL of the ledger anchoring backend (batches, transactions, transaction_receipts, ledger
// anchor transitions).

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
		serialized_batch, submitted, service_id, anchor_seq)
		VALUES ($1, NULLIF($2, ''), $3, $4, $5, false, NULLIF($6, ''), $7)`
	qLedgerTransactionInsert = `INSERT INTO transactions
		(header_signature, batch_id, family_name, family_version, signer_public_key)
		VALUES ($1, $2, $3, $4, $5)`
	qLedgerBatchGet         = `SELECT ` + qLedgerBatchColumns + ` FROM batches WHERE header_signature = $1`
	qLedgerBatchGetByAnchor = `SELECT ` + qLedgerBatchColumns + ` FROM batches WHERE anchor_seq = $1`

	// qLedgerBatchClaim claims in one statement. The subquery locks the rows it picks and skips
	// rows other claimers hold locked; under READ COMMITTED a row another claimer committed
	// meanwhile is re-checked against the WHERE clause and dropped. SET expressions see the old
	// row, so a claim_owner still set means the previous claim expired without an outcome.
	qLedgerBatchClaim = `UPDATE batches SET
			claim_owner = $1,
			claim_term = claim_term + 1,
			claim_expires = now() + $2 * interval '1 microsecond',
			attempts = attempts + CASE WHEN claim_owner IS NULL THEN 0 ELSE 1 END,
			maybe_submitted = maybe_submitted OR claim_owner IS NOT NULL,
			history = CASE WHEN claim_owner IS NULL THEN history
				ELSE history || jsonb_build_array($4::text || ' claim of ' || claim_owner || ' (term ' ||
					claim_term::text || ') expired without an outcome') END
		WHERE header_signature IN (
			SELECT header_signature FROM batches
			WHERE NOT submitted AND (claim_expires IS NULL OR claim_expires < now()) AND next_attempt_at <= now()
			ORDER BY next_attempt_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED)
		RETURNING ` + qLedgerBatchColumns

	// The fenced transitions: $1 batch id, $2 claim owner, $3 claim term.
	qLedgerFence = ` WHERE header_signature = $1 AND claim_owner = $2 AND claim_term = $3 AND NOT submitted`

	qLedgerBatchMarkSubmitted = `UPDATE batches SET submitted = true, dlt_status = 'PENDING', submitted_at = now(),
		submission_error = NULL, submission_error_message = NULL, claim_owner = NULL, claim_expires = NULL,
		maybe_submitted = false, attempts = attempts + $4, history = $5` + qLedgerFence
	qLedgerBatchMarkFailed = `UPDATE batches SET submitted = true, submission_error = $4,
		submission_error_message = $5, claim_owner = NULL, claim_expires = NULL, maybe_submitted = false,
		attempts = attempts + $6, history = $7` + qLedgerFence
	qLedgerBatchRelinquish = `UPDATE batches SET claim_owner = NULL, claim_expires = NULL,
		attempts = attempts + $4, next_attempt_at = now() + $5 * interval '1 microsecond',
		maybe_submitted = $6, history = $7` + qLedgerFence

	qLedgerUnsettled = `submitted AND submission_error IS NULL
		AND (dlt_status IS NULL OR dlt_status NOT IN ('COMMITTED', 'INVALID'))`
	qLedgerUnsettledB = `submitted AND b.submission_error IS NULL
		AND (b.dlt_status IS NULL OR b.dlt_status NOT IN ('COMMITTED', 'INVALID'))`

	// The poller's listing leaves the serialized batch out: '' decodes to no bytes.
	qLedgerBatchListUnsettled = `SELECT ` + qLedgerBatchColumnsNoBytes + ` FROM batches
		WHERE ` + qLedgerUnsettled + ` AND header_signature > $1 ORDER BY header_signature LIMIT $2`
	qLedgerBatchSetStatus = `UPDATE batches SET dlt_status = $3
		WHERE header_signature = $1 AND ` + qLedgerUnsettled + ` AND COALESCE(dlt_status, '') = $2`
	// qLedgerBatchCommitMany settles committed batches in one statement: the sub-statements
	// share one snapshot, and the receipts and anchor updates see the moved rows through
	// RETURNING.
	qLedgerBatchCommitMany = `WITH input AS (
			SELECT * FROM unnest($1::text[], $2::text[]) AS t(id, from_status)),
		moved AS (
			UPDATE batches b SET dlt_status = 'COMMITTED' FROM input i
			WHERE b.header_signature = i.id AND b.` + qLedgerUnsettledB + ` AND COALESCE(b.dlt_status, '') = i.from_status
			RETURNING b.header_signature, b.anchor_seq),
		receipts AS (
			INSERT INTO transaction_receipts (transaction_id, result_valid, serialized_receipt, external_status)
			SELECT t.header_signature, true, '', 'COMMITTED' FROM transactions t JOIN moved m ON t.batch_id = m.header_signature
			ON CONFLICT (transaction_id) DO NOTHING),
		completed AS (
			UPDATE anchors a SET status = 'completed', completed_at = now() FROM moved m
			WHERE a.seq = m.anchor_seq AND a.status = 'pending'
			RETURNING a.seq)
		SELECT m.header_signature, m.anchor_seq, c.seq IS NOT NULL FROM moved m LEFT JOIN completed c ON c.seq = m.anchor_seq`
	qLedgerBatchResubmit = `UPDATE batches SET submitted = false, dlt_status = NULL, submitted_at = NULL,
		next_attempt_at = now(), claim_owner = NULL, claim_expires = NULL, maybe_submitted = false, history = $3
		WHERE header_signature = $1 AND ` + qLedgerUnsettled + ` AND COALESCE(dlt_status, '') = $2`
	qLedgerBatchCount = `SELECT
		count(*) FILTER (WHERE NOT submitted),
		count(*) FILTER (WHERE NOT submitted AND claim_expires >= now()),
		count(*) FILTER (WHERE ` + qLedgerUnsettled + `),
		count(*) FILTER (WHERE submission_error IS NULL AND dlt_status = 'COMMITTED'),
		count(*) FILTER (WHERE submission_error IS NULL AND dlt_status = 'INVALID'),
		count(*) FILTER (WHERE submitted AND submission_error IS NOT NULL)
		FROM batches`

	qLedgerTransactionList = `SELECT header_signature, batch_id, family_name, family_version, signer_public_key
		FROM transactions WHERE batch_id = $1 ORDER BY header_signature`
	qLedgerReceiptInsert = `INSERT INTO transaction_receipts (transaction_id, result_valid, error_message,
		error_data, serialized_receipt, external_status, external_error_message)
		SELECT t.transaction_id, t.result_valid, NULLIF(t.error_message, ''), NULLIF(t.error_data, ''),
			t.serialized_receipt, NULLIF(t.external_status, ''), NULLIF(t.external_error_message, '')
		FROM unnest($1::text[], $2::bool[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
			AS t(transaction_id, result_valid, error_message, error_data, serialized_receipt, external_status,
				external_error_message)
		ON CONFLICT (transaction_id) DO NOTHING`
	qLedgerReceiptGet = `SELECT id, transaction_id, result_valid, COALESCE(error_message, ''),
		COALESCE(error_data, ''), serialized_receipt, COALESCE(external_status, ''),
		COALESCE(external_error_message, '')
		FROM transaction_receipts WHERE transaction_id = $1`

	qAnchorCompletePending = `UPDATE anchors SET status = 'completed', completed_at = now()
		WHERE seq = $1 AND status = 'pending' RETURNING ` + qAnchorColumns
	qAnchorFailPending = `UPDATE anchors SET status = 'failed', error = $2
		WHERE seq = $1 AND status = 'pending' RETURNING ` + qAnchorColumns
)
