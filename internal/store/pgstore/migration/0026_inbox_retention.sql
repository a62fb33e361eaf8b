-- Handled inbox rows expire: expires_at is set when a row is done (the retention of
-- --inbox-expiry-period), and the data-expiry task deletes the rows past it. Queued and parked
-- rows keep a NULL expires_at and stay. Rows already done are given the default retention
-- (7 days) from when they were done.
ALTER TABLE ap_inbox ADD COLUMN expires_at TIMESTAMPTZ;
UPDATE ap_inbox SET expires_at = done_at + interval '7 days' WHERE status = 'done' AND done_at IS NOT NULL;
CREATE INDEX ap_inbox_expires ON ap_inbox (expires_at) WHERE expires_at IS NOT NULL;

-- When we last posted an answer (Accept) to a peer's Follow or Invite: a repeated request within
-- the answer interval is recorded but not answered again.
ALTER TABLE ap_relationships ADD COLUMN answered_at TIMESTAMPTZ;
