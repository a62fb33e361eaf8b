-- Task permits: one row per periodic singleton task run by taskmgr. Every time is the database
-- clock. The holder may run the task; term increases on every change of holder and fences what
-- is written under the permit; a permit whose updated_at is older than check interval + task
-- interval may be taken over.
CREATE TABLE task_permits (
    task_id         TEXT        PRIMARY KEY,
    -- Instance id of the holder; '' after a graceful release.
    holder          TEXT        NOT NULL,
    previous_holder TEXT        NOT NULL DEFAULT '',
    term            BIGINT      NOT NULL CHECK (term > 0),
    status          TEXT        NOT NULL CHECK (status IN ('idle', 'running')),
    updated_at      TIMESTAMPTZ NOT NULL,
    run_started_at  TIMESTAMPTZ,
    -- End of the last run; the next starts at least the task's interval later.
    last_run_at     TIMESTAMPTZ
);
