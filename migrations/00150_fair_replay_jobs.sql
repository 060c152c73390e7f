-- +goose Up

-- The last time a replay job of each workspace was claimed: the claim takes, among the
-- workspaces with the fewest jobs held now, the one whose turn came longest ago (never first),
-- so runners go round the workspaces instead of working one workspace's jobs in id order while
-- another's wait (adapters/postgres/replayjobs, claimReplayJob, which writes it in the same
-- statement; the backfill's sync_workspace_turn is the same rule).
CREATE TABLE replay_workspace_turn (
    workspace_id bigint      PRIMARY KEY REFERENCES workspace (id) ON DELETE CASCADE,
    claimed_at   timestamptz NOT NULL
);

-- A workspace's RUNNING jobs: the start's limit count (countRunningReplayJobs) and the claim's
-- per-workspace count read it. The limit keeps it to a few rows per workspace.
CREATE INDEX ix_replay_job_workspace_running ON replay_job (workspace_id) WHERE state = 'RUNNING';

-- +goose Down
DROP INDEX ix_replay_job_workspace_running;
DROP TABLE replay_workspace_turn;
