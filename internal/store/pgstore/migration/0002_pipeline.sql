-- The write path: queued operations, parked items, CAS content, anchors and the per-DID index.

CREATE TABLE op_queue (
    id           BIGSERIAL   PRIMARY KEY,
    op_id        TEXT        NOT NULL UNIQUE,
    suffix       TEXT        NOT NULL,
    op_type      TEXT        NOT NULL,
    request      BYTEA       NOT NULL,
    instance_id  TEXT        NOT NULL,
    attempts     INTEGER     NOT NULL DEFAULT 0,
    history      JSONB       NOT NULL DEFAULT '[]',
    enqueued_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    available_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX op_queue_instance ON op_queue (instance_id, id);
CREATE INDEX op_queue_expires ON op_queue (expires_at);

CREATE TABLE dead_letters (
    id         BIGSERIAL   PRIMARY KEY,
    kind       TEXT        NOT NULL,
    ref        TEXT        NOT NULL,
    topic      TEXT        NOT NULL DEFAULT '',
    payload    BYTEA       NOT NULL,
    reason     TEXT        NOT NULL,
    attempts   INTEGER     NOT NULL,
    history    JSONB       NOT NULL DEFAULT '[]',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX dead_letters_kind ON dead_letters (kind, id);

CREATE TABLE cas_objects (
    cid        TEXT        PRIMARY KEY,
    data       BYTEA       NOT NULL,
    size       INTEGER     NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE anchors (
    seq            BIGSERIAL   PRIMARY KEY,
    anchor_string  TEXT        NOT NULL,
    core_index_cid TEXT        NOT NULL,
    op_count       INTEGER     NOT NULL,
    backend        TEXT        NOT NULL,
    status         TEXT        NOT NULL,
    record         BYTEA,
    signature      BYTEA,
    error          TEXT        NOT NULL DEFAULT '',
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    completed_at   TIMESTAMPTZ,
    observed_at    TIMESTAMPTZ
);
CREATE INDEX anchors_to_observe ON anchors (seq) WHERE status = 'completed' AND observed_at IS NULL;

CREATE TABLE did_operations (
    suffix     TEXT    NOT NULL,
    anchor_seq BIGINT  NOT NULL,
    op_index   INTEGER NOT NULL,
    op_type    TEXT    NOT NULL,
    request    BYTEA   NOT NULL,
    PRIMARY KEY (suffix, anchor_seq, op_index)
);
