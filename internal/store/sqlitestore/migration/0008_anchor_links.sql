-- Federation of anchors: this domain's anchors are published (posted to followers) in sequence
-- order with their hashlink; other domains' anchors are recorded with their origin and
-- hashlink, completed and observed in the transaction that indexes their operations.
ALTER TABLE anchors ADD COLUMN origin TEXT;
ALTER TABLE anchors ADD COLUMN hashlink TEXT;
ALTER TABLE anchors ADD COLUMN published_at INTEGER;
-- One anchor per hashlink: a second delivery of another domain's anchor is recognised by it.
CREATE UNIQUE INDEX anchors_hashlink ON anchors (hashlink);
-- The publisher's "lowest unpublished anchor of ours" stays an index lookup.
CREATE INDEX anchors_to_publish ON anchors (seq)
    WHERE origin IS NULL AND published_at IS NULL AND status <> 'failed';

-- Other domains' anchors whose parent is not applied here yet; waiting_for names that parent.
CREATE TABLE waiting_anchors (
    hashlink    TEXT    PRIMARY KEY,
    origin      TEXT    NOT NULL,
    sender      TEXT    NOT NULL,
    live        INTEGER NOT NULL,
    waiting_for TEXT    NOT NULL,
    event       BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX waiting_anchors_parent ON waiting_anchors (waiting_for);
CREATE INDEX waiting_anchors_origin ON waiting_anchors (origin);
