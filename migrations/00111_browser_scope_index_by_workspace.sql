-- +goose Up

-- The deliveries browser's scope and subject filters walk a workspace's scope newest first. Their
-- index led with scope_key (migration 00071), and that made it a candidate for the claimers'
-- per-scope lookups, which have no workspace: "is a row of this scope LEASED" (the claim, the
-- next head, the outcome) is meant for uq_provider_event_leased_scope, partial on LEASED, a few
-- pages. The statistics rarely sample a LEASED row among the retained DONE ones, so the planner
-- estimates one row either way, the costs tie, and after some autoanalyze it took the browser's
-- index and filtered every retained row of the scope on each lookup: in `make soak` the claim
-- read 1,500 buffers instead of 40 and handling slowed until the next analyze flipped it back
-- (docs/operations/performance.md, "What the soak found"). Led by workspace_id, the index serves
-- the browser as before (it always names the workspace, NULL for the installation's rows) and
-- no statement without a workspace can walk it by scope.
DROP INDEX ix_provider_event_scope_received;
CREATE INDEX ix_provider_event_workspace_scope_received
    ON provider_event (workspace_id, scope_key, received_at DESC, id DESC);

-- +goose Down
DROP INDEX ix_provider_event_workspace_scope_received;
CREATE INDEX ix_provider_event_scope_received
    ON provider_event (scope_key, received_at DESC, id DESC);
