-- One pending operation per DID across the instances of a cluster: intake reserves the DID here
-- before it publishes the operation, and the observer ends the reservation in the transaction
-- that indexes the operation. A reservation whose operation was parked, or that outlived its
-- expiry, may be taken by the next operation.
CREATE TABLE did_pending (
    suffix     TEXT        PRIMARY KEY,
    op_id      TEXT        NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

-- A reservation's operation may have been parked: found by its operation id.
CREATE INDEX dead_letters_ref ON dead_letters (ref);
