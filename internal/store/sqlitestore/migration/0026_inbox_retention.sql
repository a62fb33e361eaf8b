-- Handled inbox rows expire: expires_at is set when a row is done (the retention of
-- --inbox-expiry-period), and the data-expiry task deletes the rows past it. Queued and parked
-- rows keep a NULL expires_at and stay. Rows already done are given the default retention
-- (7 days) from when they were done.
--
-- The inbox collection pages by seq, so a seq must never be handed out twice. Without
-- AUTOINCREMENT SQLite takes the highest rowid + 1, and would hand out again the seqs of the
-- newest rows once expiry deleted them: the table is rebuilt with it.
CREATE TABLE ap_inbox_new (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
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
    done_at         INTEGER,
    expires_at      INTEGER
);
INSERT INTO ap_inbox_new (seq, activity_id, actor, from_actor, type, body, source, status, attempts,
        next_attempt_at, last_error, history, claim_owner, claim_term, claim_expires, received_at, done_at, expires_at)
    SELECT seq, activity_id, actor, from_actor, type, body, source, status, attempts,
        next_attempt_at, last_error, history, claim_owner, claim_term, claim_expires, received_at, done_at,
        CASE WHEN status = 'done' AND done_at IS NOT NULL THEN done_at + 7 * 86400000000 END
    FROM ap_inbox ORDER BY seq;
DROP TABLE ap_inbox;
ALTER TABLE ap_inbox_new RENAME TO ap_inbox;
CREATE INDEX ap_inbox_due ON ap_inbox (next_attempt_at) WHERE status = 'queued';
CREATE INDEX ap_inbox_expires ON ap_inbox (expires_at) WHERE expires_at IS NOT NULL;

-- When we last posted an answer (Accept) to a peer's Follow or Invite: a repeated request within
-- the answer interval is recorded but not answered again.
ALTER TABLE ap_relationships ADD COLUMN answered_at INTEGER;
