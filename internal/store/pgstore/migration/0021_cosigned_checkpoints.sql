-- This domain as a C2SP tlog-witness: the latest checkpoint it cosigned for each log it
-- witnesses. A row only ever changes by a compare-and-swap on (size, root_hash), so that two
-- instances never cosign two different checkpoints of one size.
CREATE TABLE cosigned_checkpoints (
    origin      TEXT        PRIMARY KEY,
    origin_hash TEXT        NOT NULL UNIQUE,
    size        BIGINT      NOT NULL,
    root_hash   BYTEA       NOT NULL,
    checkpoint  BYTEA       NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
