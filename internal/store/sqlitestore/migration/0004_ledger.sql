-- The ledger anchoring backend: Hyperledger Grid's batches, transactions and transaction_receipts
-- (column names and types of Grid's 2021-03-30 update_batch_tables migration, except that times are
-- INTEGER Unix microseconds like every time in this database), plus what claiming and anchoring
-- need.

CREATE TABLE batches (
    header_signature         TEXT    PRIMARY KEY,
    data_change_id           TEXT,
    signer_public_key        TEXT    NOT NULL,
    trace                    BOOLEAN NOT NULL,
    serialized_batch         TEXT    NOT NULL,
    submitted                BOOLEAN NOT NULL,
    submission_error         VARCHAR(16),
    submission_error_message TEXT,
    dlt_status               VARCHAR(16),
    claim_expires            INTEGER,
    created                  INTEGER NOT NULL,
    service_id               TEXT,
    -- anchord: the anchor this batch delivers (one batch per anchor).
    anchor_seq               INTEGER NOT NULL UNIQUE REFERENCES anchors (seq),
    -- anchord: claims. claim_owner stays set when a claim expires, so the next claim knows the
    -- batch may have been sent; every outcome clears it.
    claim_owner              TEXT,
    claim_term               INTEGER NOT NULL DEFAULT 0,
    attempts                 INTEGER NOT NULL DEFAULT 0,
    next_attempt_at          INTEGER NOT NULL,
    maybe_submitted          BOOLEAN NOT NULL DEFAULT 0,
    history                  TEXT    NOT NULL DEFAULT '[]',
    submitted_at             INTEGER
);
-- The claim query: unsubmitted batches by due time.
CREATE INDEX batches_claimable ON batches (next_attempt_at) WHERE NOT submitted;
-- The status poller: submitted batches without a final status.
CREATE INDEX batches_unsettled ON batches (header_signature)
    WHERE submitted AND submission_error IS NULL
      AND (dlt_status IS NULL OR dlt_status NOT IN ('COMMITTED', 'INVALID'));

CREATE TABLE transactions (
    header_signature  TEXT PRIMARY KEY,
    batch_id          TEXT NOT NULL,
    family_name       TEXT NOT NULL,
    family_version    TEXT NOT NULL,
    signer_public_key TEXT NOT NULL,
    FOREIGN KEY (batch_id) REFERENCES batches (header_signature) ON DELETE CASCADE
);
CREATE INDEX transactions_batch ON transactions (batch_id);

CREATE TABLE transaction_receipts (
    id                     INTEGER PRIMARY KEY,
    transaction_id         TEXT UNIQUE,
    result_valid           BOOLEAN NOT NULL,
    error_message          TEXT,
    error_data             TEXT,
    serialized_receipt     TEXT    NOT NULL,
    external_status        VARCHAR(16),
    external_error_message TEXT
);
