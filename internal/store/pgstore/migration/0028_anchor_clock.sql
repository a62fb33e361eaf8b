-- The anchor clock: the time of this domain's latest anchor in the did:orb profile, and when it
-- was written. One row, present from the start so that every batch transaction of the profile
-- can lock it: no two anchors of the domain fall in one whole second, whichever instance cuts
-- them.
CREATE TABLE anchor_clock (
    id         SMALLINT    PRIMARY KEY CHECK (id = 1),
    last_at    TIMESTAMPTZ,
    written_at TIMESTAMPTZ
);
INSERT INTO anchor_clock (id) VALUES (1);
