-- +goose Up

-- Periodic work whose cost does not grow with retained rows (issue 20). The gauges and the inbox
-- overview read only what an index bounds: QUEUED and LEASED rows (the backlog), DEAD rows (the
-- dead letters), and at most a fixed number of DONE rows before they estimate. DONE rows are
-- what the replay window retains (tens of millions on a busy instance); they are never scanned
-- whole.

-- The oldest due QUEUED row for the gauge (one index step), and the QUEUED count beside it
-- (an index-only count of the backlog).
CREATE INDEX ix_provider_event_queued_due ON provider_event (due_at) WHERE state = 'QUEUED';

-- One workspace's queue for the inbox overview: the QUEUED count, the oldest QUEUED arrival (one
-- index step) and the busiest scopes (scope_key is included so they are counted from the index
-- alone). NULL workspace is the installation's queue. LEASED rows are not in it: they are
-- counted along uq_provider_event_leased_scope, whose size is bounded by the claimers of all
-- servers. An index holding both states with state as a later key column would also match the
-- claim's "scope has a LEASED row" probe, and a planner that chose it there (it did, on fresh
-- statistics) would scan the whole backlog once per scope the claim visits.
CREATE INDEX ix_provider_event_queued_workspace ON provider_event (workspace_id, received_at)
    INCLUDE (scope_key) WHERE state = 'QUEUED';

-- The server that refreshes the instance-wide inbox gauges (see consumer.GaugeSingleton).
INSERT INTO singleton_lease (name) VALUES ('inbox-gauges') ON CONFLICT (name) DO NOTHING;

-- +goose Down
DELETE FROM singleton_lease WHERE name = 'inbox-gauges';
DROP INDEX ix_provider_event_queued_workspace;
DROP INDEX ix_provider_event_queued_due;
