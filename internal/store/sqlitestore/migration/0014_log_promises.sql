-- Log promises: a witness's proof may come with the place in its witness log where it logged
-- the credential (origin and index) and a deadline; the proof monitor marks each promise
-- verified or broken, once. A broken promise's proof no longer counts for the anchor. Times
-- are Unix microseconds.
ALTER TABLE anchor_witnesses ADD COLUMN log_origin TEXT;
ALTER TABLE anchor_witnesses ADD COLUMN log_index INTEGER;
ALTER TABLE anchor_witnesses ADD COLUMN log_deadline INTEGER;
ALTER TABLE anchor_witnesses ADD COLUMN log_verified_at INTEGER;
ALTER TABLE anchor_witnesses ADD COLUMN log_broken_at INTEGER;

-- What the proof monitor reads at every run: the unsettled promises, oldest proof first.
CREATE INDEX anchor_witnesses_unsettled ON anchor_witnesses (proof_at, anchor_seq, actor)
    WHERE log_index IS NOT NULL AND log_verified_at IS NULL AND log_broken_at IS NULL;
CREATE INDEX anchor_witnesses_broken ON anchor_witnesses (actor) WHERE log_broken_at IS NOT NULL;
