-- +goose Up

-- Attempt history (issue 35 point 2, CONTRACT.md "Operator API"): one row per attempt of an
-- inbox row, written by the attempt's own outcome statement (the claimers' batched outcome
-- write, the reaper's expiry write, a stopping server's release), so recording it costs no
-- statement of its own. Kept as long as its inbox row and erased with it: retention, workspace
-- deletion and person erasure delete provider_event rows, and the attempts cascade.
--
-- An attempt is one lease: (event_id, lease_epoch) names it, since every claim takes a new epoch
-- and a replay keeps the epoch counter. attempt is the row's attempt number during that lease
-- (a contention retry or a release gives the number back, so the next lease shows it again).
-- cause is the failure table's cause (domain/inbox.Cause: 'provider-refused', 'lease-expired',
-- …), never an error message; NULL for a done attempt and a release.
CREATE TABLE provider_event_attempt (
    event_id     bigint      NOT NULL REFERENCES provider_event (id) ON DELETE CASCADE,
    lease_epoch  bigint      NOT NULL,
    attempt      integer     NOT NULL,
    started_at   timestamptz,
    ended_at     timestamptz NOT NULL,
    server       text,
    outcome      text        NOT NULL CHECK (outcome IN ('done', 'retried', 'dead', 'lease-expired', 'released')),
    cause        text,
    PRIMARY KEY (event_id, lease_epoch)
);

-- When the current (or latest) lease began. With leased_by (which, like it, now names the latest
-- claim until the next one, instead of being cleared by the outcome) it is what the attempt's
-- row records as its start and server, read from the outcome statement's RETURNING. NULL for a
-- row never claimed, or claimed before this migration.
ALTER TABLE provider_event ADD COLUMN leased_at timestamptz;

-- +goose Down
ALTER TABLE provider_event DROP COLUMN leased_at;
DROP TABLE provider_event_attempt;
