-- Liveness of each instance's operation queue: refreshed every op-queue-task-monitor-interval.
-- An instance's Ack commits only while its row exists, and the op-queue monitor deletes the rows
-- of instances that stopped refreshing before reposting their operations (the fence).
CREATE TABLE op_queue_tasks (
    instance_id TEXT    PRIMARY KEY,
    updated_at  INTEGER NOT NULL
);

-- Operations anchored recently, by operation id (the hash of the canonical request), written in
-- the anchor's transaction. A duplicate of an operation (a message delivered twice, a repost
-- racing a take-over) is recognised here and never anchored a second time. Rows expire after
-- op-queue-operation-lifespan, by which time no duplicate can still be in flight.
CREATE TABLE anchored_ops (
    op_id      TEXT    PRIMARY KEY,
    anchor_seq INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX anchored_ops_expires ON anchored_ops (expires_at);
