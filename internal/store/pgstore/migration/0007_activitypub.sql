-- The ActivityPub service of the domain (see docs/design/federation.md).

-- Our outbox: every activity we posted, in the order posted. Public activities (addressed to
-- as:Public) get a position 1, 2, 3, … handed out in commit order under a transaction-scoped
-- advisory lock, so the public outbox pages by a number that never changes.
CREATE TABLE ap_outbox (
    seq         BIGSERIAL   PRIMARY KEY,
    activity_id TEXT        NOT NULL UNIQUE,
    type        TEXT        NOT NULL,
    body        BYTEA       NOT NULL,
    public      BOOLEAN     NOT NULL,
    position    BIGINT      UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One delivery per (activity, recipient actor): claimed by deliverers, retried on the
-- redelivery schedule, parked after the last attempt. Delivered rows expire (expires_at).
CREATE TABLE ap_deliveries (
    id              BIGSERIAL   PRIMARY KEY,
    outbox_seq      BIGINT      NOT NULL REFERENCES ap_outbox (seq),
    recipient       TEXT        NOT NULL,
    status          TEXT        NOT NULL DEFAULT 'pending',
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_error      TEXT        NOT NULL DEFAULT '',
    history         JSONB       NOT NULL DEFAULT '[]',
    claim_owner     TEXT,
    claim_term      BIGINT      NOT NULL DEFAULT 0,
    claim_expires   TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at    TIMESTAMPTZ,
    expires_at      TIMESTAMPTZ,
    UNIQUE (outbox_seq, recipient)
);
CREATE INDEX ap_deliveries_due ON ap_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX ap_deliveries_expires ON ap_deliveries (expires_at) WHERE expires_at IS NOT NULL;

-- Our inbox: one row per received activity id (a second copy is a no-op), claimed by the inbox
-- processors. Rows stay: they are the inbox collection and the record of what was seen.
CREATE TABLE ap_inbox (
    seq             BIGSERIAL   PRIMARY KEY,
    activity_id     TEXT        NOT NULL UNIQUE,
    actor           TEXT        NOT NULL,
    from_actor      TEXT        NOT NULL,
    type            TEXT        NOT NULL,
    body            BYTEA       NOT NULL,
    source          TEXT        NOT NULL,
    status          TEXT        NOT NULL DEFAULT 'queued',
    attempts        INTEGER     NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_error      TEXT        NOT NULL DEFAULT '',
    history         JSONB       NOT NULL DEFAULT '[]',
    claim_owner     TEXT,
    claim_term      BIGINT      NOT NULL DEFAULT 0,
    claim_expires   TIMESTAMPTZ,
    received_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    done_at         TIMESTAMPTZ
);
CREATE INDEX ap_inbox_due ON ap_inbox (next_attempt_at) WHERE status = 'queued';

-- Other domains' actor documents as last fetched.
CREATE TABLE ap_actors (
    iri        TEXT        PRIMARY KEY,
    inbox      TEXT        NOT NULL,
    outbox     TEXT        NOT NULL DEFAULT '',
    key_id     TEXT        NOT NULL DEFAULT '',
    key_pem    TEXT        NOT NULL DEFAULT '',
    document   BYTEA       NOT NULL,
    fetched_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX ap_actors_key ON ap_actors (key_id);

-- Who follows or witnesses whom, from our side; seq orders the collections.
CREATE TABLE ap_relationships (
    seq         BIGSERIAL   UNIQUE,
    kind        TEXT        NOT NULL,
    actor       TEXT        NOT NULL,
    status      TEXT        NOT NULL,
    activity_id TEXT        NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, actor)
);

-- Actors allowed to follow us or invite us to witness, under the accept-list policies.
CREATE TABLE ap_accept_list (
    type       TEXT        NOT NULL,
    actor      TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (type, actor)
);

-- How far the activity sync has read each source collection.
CREATE TABLE ap_sync_positions (
    source     TEXT        PRIMARY KEY,
    position   TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
