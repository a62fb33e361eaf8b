-- One pending operation per DID across the instances of a cluster (PostgreSQL only in practice:
-- an embedded instance keeps its reservations in memory). The table exists here too so that both
-- backends pass one conformance suite.
CREATE TABLE did_pending (
    suffix     TEXT    PRIMARY KEY,
    op_id      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE INDEX dead_letters_ref ON dead_letters (ref);
