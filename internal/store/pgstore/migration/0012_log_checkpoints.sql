-- The witness logs of other domains that the log consistency monitor watches: the last
-- checkpoint verified consistent with every earlier one, and the last one found inconsistent
-- (reported once, with a dead letter holding both).
CREATE TABLE log_checkpoints (
    origin     TEXT        PRIMARY KEY,
    checkpoint BYTEA       NOT NULL,
    size       BIGINT      NOT NULL,
    rejected   BYTEA,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
