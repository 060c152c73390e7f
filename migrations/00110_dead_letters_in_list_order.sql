-- +goose Up

-- The deliveries browser's DEAD and errorClass filters walk this workspace's dead letters in the
-- browser's list order (received_at, then id, newest first) and stop after the page, whatever
-- other workspaces hold. Before it they used ix_provider_event_dead, in ended_at order, and had
-- to sort: when other tenants held many dead letters the planner, which cannot tell whose they
-- are, guessed thousands in this workspace, judged the sort dearer than walking
-- ix_provider_event_workspace_received and filtering, and read every retained row of the
-- workspace for a page of two (specs/inbox/counts_test.go, "Inbox counts with millions of
-- retained rows"). DEAD rows are few (dead retention bounds them), so the index is small and
-- only a row's move to or from DEAD writes it.
CREATE INDEX ix_provider_event_dead_received
    ON provider_event (workspace_id, received_at DESC, id DESC) WHERE state = 'DEAD';

-- +goose Down
DROP INDEX ix_provider_event_dead_received;
