-- +goose Up

-- The change feed (CONTRACT.md "Change feed"). A mirror store inserts one row per change it
-- made, in the transaction (and the named step) of the mirror write, so the change commits or
-- rolls back with it. xid is the writing transaction's id (pg_current_xact_id(), assigned at its
-- first write): the feed is ordered by (xid, id) and hands out only rows whose xid is older than
-- the oldest in-flight transaction of this database, that is rows of transactions that can no longer commit anything
-- new below the cursor (see adapters/postgres/changefeed).
CREATE TABLE workspace_change (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    xid          xid8        NOT NULL DEFAULT pg_current_xact_id(),
    type         text        NOT NULL,
    subject      text        NOT NULL,
    occurred_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    data         jsonb       NOT NULL
);
-- A feed read is one descent to the cursor and a walk in cursor order within the workspace.
CREATE INDEX ix_workspace_change_feed ON workspace_change (workspace_id, xid, id);
-- Retention deletes the oldest rows first.
CREATE INDEX ix_workspace_change_occurred ON workspace_change (occurred_at);

-- The highest cursor retention deleted, per workspace: a cursor below it lost changes (410
-- cursor-expired).
CREATE TABLE workspace_change_horizon (
    workspace_id bigint PRIMARY KEY REFERENCES workspace (id) ON DELETE CASCADE,
    xid          xid8   NOT NULL,
    id           bigint NOT NULL
);

INSERT INTO singleton_lease (name) VALUES ('change-retention') ON CONFLICT (name) DO NOTHING;

-- +goose Down
DELETE FROM singleton_lease WHERE name = 'change-retention';
DROP TABLE workspace_change_horizon;
DROP TABLE workspace_change;
