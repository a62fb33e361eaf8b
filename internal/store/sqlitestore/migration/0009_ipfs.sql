-- Files queued for the IPFS node (--cas-type ipfs). A row is written in the transaction that
-- stores the file locally; the pinner adds it to the node and marks it done, retrying with
-- backoff, and parks it (a dead letter) after its attempts. Done rows stay, so that
-- pin-missing can queue again what a wiped node lost. Times are Unix microseconds.
CREATE TABLE cas_pins (
    cid         TEXT    PRIMARY KEY,
    status      TEXT    NOT NULL DEFAULT 'queued',
    attempts    INTEGER NOT NULL DEFAULT 0,
    history     TEXT    NOT NULL DEFAULT '[]',
    due_at      INTEGER NOT NULL,
    claimed_by  TEXT    NOT NULL DEFAULT '',
    claim_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX cas_pins_due ON cas_pins (due_at) WHERE status = 'queued';
