-- +goose Up

-- Bulk replay (issue 35 point 3, CONTRACT.md "Operator API"): a durable job that replays the
-- DEAD rows of a workspace that matched a filter when it started, in batches, with the single
-- replay's rules (adapters/postgres/inboxstore).
--
-- The matched rows are fixed when the job starts (replay_job_row, one statement in the start
-- transaction), so the dry-run count, "matched" and the rows the job works agree, and a row
-- that stops being DEAD before its batch comes is counted skipped instead of vanishing from the
-- numbers. Each batch is its own short transaction that moves cursor (the last event id it
-- worked) forward with its counts, so a restarted job resumes after the last committed batch.
--
-- One server works a job at a time: leased_by/leased_until/lease_epoch are the inbox's lease
-- (a claim raises the epoch; every batch names it and fails under a newer one), so a killed
-- server's job is taken over when its lease runs out and the stale server cannot write again.
CREATE TABLE replay_job (
    id                        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id              bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    state                     text        NOT NULL CHECK (state IN ('RUNNING', 'DONE', 'CANCELLED', 'FAILED')),
    -- The filter as the operator gave it (provider, eventType, errorClass, deadAfter,
    -- deadBefore, receivedAfter, receivedBefore), shown back with the job.
    filter                    jsonb       NOT NULL,
    matched                   bigint      NOT NULL CHECK (matched >= 0),
    replayed                  bigint      NOT NULL DEFAULT 0,
    skipped                   bigint      NOT NULL DEFAULT 0,
    -- The requesting principal, recorded on every row the job replays (provider_event's
    -- replayed_by / replayed_by_admin_token); no foreign key: a disabled account keeps its id.
    requested_by              bigint,
    requested_by_admin_token  boolean     NOT NULL,
    cursor                    bigint      NOT NULL DEFAULT 0,
    lease_epoch               bigint      NOT NULL DEFAULT 0,
    leased_by                 text,
    leased_until              timestamptz,
    started_at                timestamptz NOT NULL,
    finished_at               timestamptz,
    CONSTRAINT ck_replay_job_principal CHECK ((requested_by IS NULL) = requested_by_admin_token),
    CONSTRAINT ck_replay_job_finished CHECK ((state = 'RUNNING') = (finished_at IS NULL))
);
-- A workspace's jobs, newest first (the list and its count).
CREATE INDEX ix_replay_job_workspace ON replay_job (workspace_id, id DESC);
-- The runners' claim: the few RUNNING jobs, by lease expiry.
CREATE INDEX ix_replay_job_running ON replay_job (leased_until NULLS FIRST, id) WHERE state = 'RUNNING';

-- The rows a RUNNING job still has to look at, walked in event id order (the primary key is
-- the keyset); deleted when the job ends. No foreign key to provider_event: a row that
-- retention or erasure deleted meanwhile is counted skipped when its batch comes.
CREATE TABLE replay_job_row (
    job_id    bigint NOT NULL REFERENCES replay_job (id) ON DELETE CASCADE,
    event_id  bigint NOT NULL,
    PRIMARY KEY (job_id, event_id)
);

-- +goose Down
DROP TABLE replay_job_row;
DROP TABLE replay_job;
