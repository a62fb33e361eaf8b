-- This domain as a C2SP tlog-witness: the latest checkpoint it cosigned for each log it
-- witnesses. A row only ever changes by a compare-and-swap on (size, root_hash). Times are
-- Unix microseconds.
CREATE TABLE cosigned_checkpoints (
    origin      TEXT    PRIMARY KEY,
    origin_hash TEXT    NOT NULL UNIQUE,
    size        INTEGER NOT NULL,
    root_hash   BLOB    NOT NULL,
    checkpoint  BLOB    NOT NULL,
    updated_at  INTEGER NOT NULL
);
