-- Log promises: a witness's proof may come with the place in its witness log where it logged
-- the credential (origin and index) and a deadline; the proof monitor marks each promise
-- verified or broken, once. A broken promise's proof no longer counts for the anchor.
ALTER TABLE anchor_witnesses
    ADD COLUMN log_origin      TEXT,
    ADD COLUMN log_index       BIGINT,
    ADD COLUMN log_deadline    TIMESTAMPTZ,
    ADD COLUMN log_verified_at TIMESTAMPTZ,
    ADD COLUMN log_broken_at   TIMESTAMPTZ;

-- What the proof monitor reads at every run: the unsettled promises, oldest proof first.
CREATE INDEX anchor_witnesses_unsettled ON anchor_witnesses (proof_at, anchor_seq, actor)
    WHERE log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL;
CREATE INDEX anchor_witnesses_broken ON anchor_witnesses (actor) WHERE log_broken_at IS NOT NULL;
