-- The anchor clock: the time of this domain's latest anchor in the did:orb profile, and when it
-- was written (Unix microseconds). One row, so that no two anchors of the domain fall in one
-- whole second.
CREATE TABLE anchor_clock (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    last_at    INTEGER,
    written_at INTEGER
);
INSERT INTO anchor_clock (id) VALUES (1);
