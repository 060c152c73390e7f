-- +goose Up

-- The deliveries browser's provider, event type and backlog-state filters, each walked in the
-- browser's list order (received_at, then id, newest first) from its first matching row, so a
-- page and its capped count read what they return and stop: a value that matches nothing in
-- the workspace ends at once, whatever the workspace retains. Before these indexes those
-- filters narrowed the walk of ix_provider_event_workspace_received, and a value with no row
-- (eventType=no-such-event, provider=SLACK in a GitHub workspace, state=QUEUED in a quiet one)
-- read every retained row of the workspace twice, for the count and for the page
-- (adapters/postgres/deadletterstore, specs/inbox/counts_test.go asserts each plan).
--
-- All three lead with workspace_id: every browser statement names the workspace (NULL for the
-- installation's rows), and no statement of the claimers, the reaper or admission names one, so
-- none of them can take these indexes for their own (see migration 00111).
--
-- provider, and provider with eventType when the provider is the rarer of the two.
CREATE INDEX ix_provider_event_workspace_provider_received
    ON provider_event (workspace_id, provider, received_at DESC, id DESC);
-- eventType, alone or with provider (an event type belongs to one provider).
CREATE INDEX ix_provider_event_workspace_event_received
    ON provider_event (workspace_id, event_type, received_at DESC, id DESC);
-- state QUEUED and state LEASED: the backlog, a few rows beside the retained DONE ones. Partial,
-- so a row leaves it when it ends and retained rows cost it nothing. DEAD rows have
-- ix_provider_event_dead_received (migration 00110); DONE rows are nearly all the retained rows,
-- so ix_provider_event_workspace_received finds a page of them at once.
CREATE INDEX ix_provider_event_backlog_received
    ON provider_event (workspace_id, state, received_at DESC, id DESC) WHERE state IN ('QUEUED', 'LEASED');

-- +goose Down
DROP INDEX ix_provider_event_backlog_received;
DROP INDEX ix_provider_event_workspace_event_received;
DROP INDEX ix_provider_event_workspace_provider_received;
