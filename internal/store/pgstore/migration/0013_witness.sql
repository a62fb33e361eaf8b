-- Witnessing. Origin side: this domain's anchors offered to witnesses (what was offered, so
-- that re-offers and the published anchor carry the same credential), and each anchor's
-- witnesses with their Offer and proof. Witness side: the Offers this domain signed, one
-- answer each.
CREATE TABLE witness_anchors (
    anchor_seq   BIGINT PRIMARY KEY REFERENCES anchors (seq),
    vc_id        TEXT    NOT NULL UNIQUE,
    hashlink     TEXT    NOT NULL,
    link         BYTEA   NOT NULL,
    credential   BYTEA   NOT NULL,
    origin_proof BYTEA   NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    check_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX witness_anchors_check ON witness_anchors (check_at);

CREATE TABLE anchor_witnesses (
    anchor_seq BIGINT  NOT NULL REFERENCES witness_anchors (anchor_seq),
    actor      TEXT    NOT NULL,
    batch      BOOLEAN NOT NULL,
    system     BOOLEAN NOT NULL,
    has_log    BOOLEAN NOT NULL,
    selected   BOOLEAN NOT NULL,
    offer_id   TEXT,
    offered_at TIMESTAMPTZ,
    offer_end  TIMESTAMPTZ,
    proof      BYTEA,
    proof_at   TIMESTAMPTZ,
    PRIMARY KEY (anchor_seq, actor)
);

CREATE TABLE witnessed (
    offer_id   TEXT    PRIMARY KEY,
    offerer    TEXT    NOT NULL,
    hashlink   TEXT    NOT NULL,
    vc_id      TEXT    NOT NULL,
    accept_id  TEXT    NOT NULL,
    proof      BYTEA   NOT NULL,
    log_index  BIGINT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
