-- Witnessing. Origin side: this domain's anchors offered to witnesses (what was offered, so
-- that re-offers and the published anchor carry the same credential), and each anchor's
-- witnesses with their Offer and proof. Witness side: the Offers this domain signed, one
-- answer each. Times are Unix microseconds.
CREATE TABLE witness_anchors (
    anchor_seq   INTEGER PRIMARY KEY REFERENCES anchors (seq),
    vc_id        TEXT    NOT NULL UNIQUE,
    hashlink     TEXT    NOT NULL,
    link         BLOB    NOT NULL,
    credential   BLOB    NOT NULL,
    origin_proof BLOB    NOT NULL,
    created_at   INTEGER NOT NULL,
    check_at     INTEGER NOT NULL
);
CREATE INDEX witness_anchors_check ON witness_anchors (check_at);

CREATE TABLE anchor_witnesses (
    anchor_seq INTEGER NOT NULL REFERENCES witness_anchors (anchor_seq),
    actor      TEXT    NOT NULL,
    batch      INTEGER NOT NULL,
    system     INTEGER NOT NULL,
    has_log    INTEGER NOT NULL,
    selected   INTEGER NOT NULL,
    offer_id   TEXT,
    offered_at INTEGER,
    offer_end  INTEGER,
    proof      BLOB,
    proof_at   INTEGER,
    PRIMARY KEY (anchor_seq, actor)
);

CREATE TABLE witnessed (
    offer_id   TEXT    PRIMARY KEY,
    offerer    TEXT    NOT NULL,
    hashlink   TEXT    NOT NULL,
    vc_id      TEXT    NOT NULL,
    accept_id  TEXT    NOT NULL,
    proof      BLOB    NOT NULL,
    log_index  INTEGER,
    created_at INTEGER NOT NULL
);
