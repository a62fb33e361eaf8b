-- The ActivityPub service of the domain (see docs/design/federation.md). Times are INTEGER Unix
-- microseconds, as everywhere in this database.

-- Our outbox. Public activities get a position 1, 2, 3, …; the single writer hands them out in
-- commit order, so the public outbox pages by a number that never changes.
CREATE TABLE ap_outbox (
    seq         INTEGER PRIMARY KEY,
    activity_id TEXT    NOT NULL UNIQUE,
    type        TEXT    NOT NULL,
    body        BLOB    NOT NULL,
    public      BOOLEAN NOT NULL,
    position    INTEGER UNIQUE,
    created_at  INTEGER NOT NULL
);

-- One delivery per (activity, recipient actor). Delivered rows expire (expires_at).
CREATE TABLE ap_deliveries (
    id              INTEGER PRIMARY KEY,
    outbox_seq      INTEGER NOT NULL REFERENCES ap_outbox (seq),
    recipient       TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT    NOT NULL DEFAULT '',
    history         TEXT    NOT NULL DEFAULT '[]',
    claim_owner     TEXT,
    claim_term      INTEGER NOT NULL DEFAULT 0,
    claim_expires   INTEGER,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    expires_at      INTEGER,
    UNIQUE (outbox_seq, recipient)
);
CREATE INDEX ap_deliveries_due ON ap_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX ap_deliveries_expires ON ap_deliveries (expires_at) WHERE expires_at IS NOT NULL;

-- Our inbox: one row per received activity id; rows stay.
CREATE TABLE ap_inbox (
    seq             INTEGER PRIMARY KEY,
    activity_id     TEXT    NOT NULL UNIQUE,
    actor           TEXT    NOT NULL,
    from_actor      TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    body            BLOB    NOT NULL,
    source          TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error      TEXT    NOT NULL DEFAULT '',
    history         TEXT    NOT NULL DEFAULT '[]',
    claim_owner     TEXT,
    claim_term      INTEGER NOT NULL DEFAULT 0,
    claim_expires   INTEGER,
    received_at     INTEGER NOT NULL,
    done_at         INTEGER
);
CREATE INDEX ap_inbox_due ON ap_inbox (next_attempt_at) WHERE status = 'queued';

-- Other domains' actor documents as last fetched.
CREATE TABLE ap_actors (
    iri        TEXT    PRIMARY KEY,
    inbox      TEXT    NOT NULL,
    outbox     TEXT    NOT NULL DEFAULT '',
    key_id     TEXT    NOT NULL DEFAULT '',
    key_pem    TEXT    NOT NULL DEFAULT '',
    document   BLOB    NOT NULL,
    fetched_at INTEGER NOT NULL
);
CREATE INDEX ap_actors_key ON ap_actors (key_id);

-- Who follows or witnesses whom, from our side; the rowid orders the collections (an upsert
-- keeps it).
CREATE TABLE ap_relationships (
    kind        TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    activity_id TEXT    NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (kind, actor)
);

-- Actors allowed to follow us or invite us to witness, under the accept-list policies.
CREATE TABLE ap_accept_list (
    type       TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (type, actor)
);

-- How far the activity sync has read each source collection.
CREATE TABLE ap_sync_positions (
    source     TEXT    PRIMARY KEY,
    position   TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
);
