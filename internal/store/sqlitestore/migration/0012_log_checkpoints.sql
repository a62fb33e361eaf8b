-- The witness logs of other domains that the log consistency monitor watches: the last
-- checkpoint verified consistent with every earlier one, and the last one found inconsistent
-- (reported once, with a dead letter holding both). Times are Unix microseconds.
CREATE TABLE log_checkpoints (
    origin     TEXT    PRIMARY KEY,
    checkpoint BLOB    NOT NULL,
    size       INTEGER NOT NULL,
    rejected   BLOB,
    updated_at INTEGER NOT NULL
);
