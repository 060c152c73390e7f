-- Slack's verification token out of the stored payloads.
--
-- Every Events API envelope carries the Slack app's verification token, the same for every team.
-- Admission now removes it before a row is written (adapters/slack: withoutCredentials); this
-- scrubs the rows stored before. The UPDATE reads every Slack row once and rewrites only those
-- that hold a token. Each rewritten row is locked until the migration commits (a transaction
-- that holds one, such as a handler's fenced step, is waited for); nothing else changes: the
-- rows keep their id, state, lease and ordering, and the scope heads' statement trigger sees no
-- state or scope change. A one-off pass over the Slack rows, which retention bounds.

-- +goose Up
UPDATE provider_event SET payload = payload - 'token'
WHERE provider = 'SLACK' AND payload ? 'token';

-- +goose Down
-- The tokens are gone; nothing to restore.
