-- +goose Up

-- The deliveries browser (issue 35 point 1, CONTRACT.md "Operator API") lists every inbox row of
-- a workspace, newest first (received_at, then id), at a page cost that does not grow with the
-- retained rows: each of its statements walks one of these indexes in list order and stops after
-- the page (adapters/postgres/deadletterstore, specs/operator asserts the plans).
--
-- The workspace's rows newest first, and the received-at range (receivedAfter, receivedBefore)
-- as an index range. provider, eventType and state (but DEAD) narrow this walk. NULL workspace
-- is the installation's rows.
CREATE INDEX ix_provider_event_workspace_received
    ON provider_event (workspace_id, received_at DESC, id DESC);
-- One scope's rows newest first: the scopeKey filter, and the subject filter of a workspace (its
-- scope is "ws:<workspace>:<subject>", domain/inbox.WorkspaceScope).
CREATE INDEX ix_provider_event_scope_received
    ON provider_event (scope_key, received_at DESC, id DESC);
-- deliveryKey uses uq_provider_event_delivery (workspace_id, provider, delivery_key); errorClass
-- is set on DEAD rows only and uses ix_provider_event_dead.

-- +goose Down
DROP INDEX ix_provider_event_scope_received;
DROP INDEX ix_provider_event_workspace_received;
