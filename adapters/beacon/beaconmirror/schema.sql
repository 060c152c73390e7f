-- +goose Up

-- The Beacon mirror: the incidents of the workspace's status pages, as the Beacon handlers copy
-- them out of incident deliveries. It follows the conventions of the other mirrors (00005,
-- 00006): keyed by the workspace first and Beacon's incident id after it, the workspace a
-- foreign key with ON DELETE CASCADE; a row carries the version that wrote it,
-- (source_updated_at, source_event_id), and an upsert applies only when its version is not
-- older; deleted is the tombstone flag the mirror kit's reporting upsert reads (Beacon never
-- deletes an incident, so it stays false).
--
-- author_id and author_name name a person (the author of the incident's latest update): person
-- erasure sets both to NULL (beaconmirror's personal-data map).
CREATE TABLE beacon_incident (
    workspace_id       bigint      NOT NULL REFERENCES workspace (id) ON DELETE CASCADE,
    id                 text        NOT NULL,
    page_id            text        NOT NULL DEFAULT '',
    title              text        NOT NULL DEFAULT '',
    status             text        NOT NULL DEFAULT '',
    impact             text        NOT NULL DEFAULT '',
    author_id          text,
    author_name        text,
    resolved_at        timestamptz,
    deleted            boolean     NOT NULL DEFAULT false,
    source_updated_at  timestamptz NOT NULL,
    source_event_id    bigint      NOT NULL,
    PRIMARY KEY (workspace_id, id)
);
-- The read API's list: most recently updated first.
CREATE INDEX ix_beacon_incident_list ON beacon_incident (workspace_id, source_updated_at DESC, id);

-- An uninstalled Beacon connection is torn down by a teardown job (TeardownSource): the job
-- runner asks sync_provider_tears_down which providers have one. The current function is kept
-- under another name and the new one adds Beacon to its answer, so this migration composes
-- with any other provider's (as 00031 does for Outline).
ALTER FUNCTION sync_provider_tears_down(text) RENAME TO sync_provider_tears_down_before_beacon;
-- +goose StatementBegin
CREATE FUNCTION sync_provider_tears_down(provider text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT sync_provider_tears_down_before_beacon(provider) OR provider = 'BEACON'
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION sync_provider_tears_down(text);
ALTER FUNCTION sync_provider_tears_down_before_beacon(text) RENAME TO sync_provider_tears_down;
DROP TABLE beacon_incident;
