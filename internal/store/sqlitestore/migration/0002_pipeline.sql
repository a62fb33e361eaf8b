-- The write path: queued operations, parked items, CAS content, anchors and the per-DID index.
-- Times are INTEGER Unix microseconds (UTC).

CREATE TABLE op_queue (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    op_id        TEXT    NOT NULL UNIQUE,
    suffix       TEXT    NOT NULL,
    op_type      TEXT    NOT NULL,
    request      BLOB    NOT NULL,
    instance_id  TEXT    NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    history      TEXT    NOT NULL DEFAULT '[]',
    enqueued_at  INTEGER NOT NULL,
    available_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
);
-- No index on instance_id or expires_at, unlike PostgreSQL: an embedded store has one owner,
-- so every instance query is a primary-key range, and the expiry task's once-a-minute scan of
-- the queue costs less than maintaining an index at every accepted operation (measured).

CREATE TABLE dead_letters (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT    NOT NULL,
    ref        TEXT    NOT NULL,
    topic      TEXT    NOT NULL DEFAULT '',
    payload    BLOB    NOT NULL,
    reason     TEXT    NOT NULL,
    attempts   INTEGER NOT NULL,
    history    TEXT    NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL
);
CREATE INDEX dead_letters_kind ON dead_letters (kind, id);

CREATE TABLE cas_objects (
    cid        TEXT    PRIMARY KEY,
    data       BLOB    NOT NULL,
    size       INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE anchors (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    anchor_string  TEXT    NOT NULL,
    core_index_cid TEXT    NOT NULL,
    op_count       INTEGER NOT NULL,
    backend        TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    record         BLOB,
    signature      BLOB,
    error          TEXT    NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    completed_at   INTEGER,
    observed_at    INTEGER
);
-- Partial index: the observer's "next completed, unobserved anchor" stays an index lookup however
-- many anchors exist.
CREATE INDEX anchors_to_observe ON anchors (seq) WHERE status = 'completed' AND observed_at IS NULL;

CREATE TABLE did_operations (
    suffix     TEXT    NOT NULL,
    anchor_seq INTEGER NOT NULL,
    op_index   INTEGER NOT NULL,
    op_type    TEXT    NOT NULL,
    request    BLOB    NOT NULL,
    PRIMARY KEY (suffix, anchor_seq, op_index)
) WITHOUT ROWID;
