package slackmirror

// channelConsent takes FOR SHARE on the registry row and keeps it to commit: a message write
// and a registry change of the same channel cannot interleave (the change's FOR UPDATE waits
// for the message step, or the message step sees the committed change).
const channelConsent = `
SELECT team_id, id, name, consent_state FROM slack_channel WHERE workspace_id = $1 AND id = $2 FOR SHARE`

// lockChannel is the registry change's lock: FOR UPDATE, held to commit.
const lockChannel = `
SELECT team_id, id, name, consent_state FROM slack_channel WHERE workspace_id = $1 AND id = $2 FOR UPDATE`

const readChannel = `
SELECT team_id, id, name, consent_state FROM slack_channel WHERE workspace_id = $1 AND id = $2`

const saveChannel = `
INSERT INTO slack_channel AS t (workspace_id, team_id, id, name, consent_state, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (workspace_id, id) DO UPDATE SET
    team_id = excluded.team_id,
    name = excluded.name,
    consent_state = excluded.consent_state,
    consent_changed_at = CASE WHEN t.consent_state = excluded.consent_state THEN t.consent_changed_at ELSE now() END,
    source_event_id = excluded.source_event_id`

const appendAudit = `
INSERT INTO slack_channel_audit (workspace_id, team_id, channel_id, action, consent_state, source_event_id)
VALUES ($1, $2, $3, $4, $5, $6)`

// insertMessage keeps an existing message or tombstone as it is (a redelivery, or a base insert
// of an edit whose message is already mirrored).
const insertMessage = `
INSERT INTO slack_message (workspace_id, team_id, channel_id, ts, thread_ts, user_id, text, posted_at, source_event_id)
VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), $7, $8, $9)
ON CONFLICT (workspace_id, channel_id, ts) DO NOTHING
RETURNING 1`

// editMessageText: the edit's timestamp versions the text. Strictly newer than the stored edit
// timestamp: a retry after the timestamp write committed, or an older edit, changes nothing.
const editMessageText = `
UPDATE slack_message SET text = $4, source_event_id = $6
WHERE workspace_id = $1 AND channel_id = $2 AND ts = $3 AND NOT deleted
  AND (edited_ts IS NULL OR edited_ts::numeric < $5::numeric)`

const editMessageTimestamp = `
UPDATE slack_message SET edited_ts = $4, source_event_id = $5
WHERE workspace_id = $1 AND channel_id = $2 AND ts = $3 AND NOT deleted
  AND (edited_ts IS NULL OR edited_ts::numeric < $4::numeric)`

// deleteMessage keeps a tombstone without content, so a late insert or edit cannot bring the
// message back.
const deleteMessage = `
UPDATE slack_message SET deleted = true, text = '', user_id = NULL, source_event_id = $4
WHERE workspace_id = $1 AND channel_id = $2 AND ts = $3`

// tombstoneMessage is deleteMessage for a message the mirror may never have had: the
// tombstone is inserted on the natural key (no text, no user), so a history page read before
// the deletion and committed after it finds the tombstone and stores nothing (insertMessage
// keeps it), and the read API and change feed see a deleted message.
const tombstoneMessage = `
INSERT INTO slack_message AS m (workspace_id, team_id, channel_id, ts, text, deleted, posted_at, source_event_id)
VALUES ($1, $2, $3, $4, '', true, $5, $6)
ON CONFLICT (workspace_id, channel_id, ts) DO UPDATE SET deleted = true, text = '', user_id = NULL,
    source_event_id = excluded.source_event_id`

const eraseChannelMessages = `DELETE FROM slack_message WHERE workspace_id = $1 AND channel_id = $2`

// lockTeamConnections is the connections' lifecycle lock (the same FOR UPDATE the management
// transitions take), in id order so two uninstall steps cannot deadlock.
const lockTeamConnections = `
SELECT id, state FROM connection
WHERE workspace_id = $1 AND provider = 'SLACK' AND source_key = $2
ORDER BY id
FOR UPDATE`

// teamConnectionStates re-reads the states under FOR SHARE held to commit: a suspension waits
// for the mentor write, or the write sees it.
const teamConnectionStates = `
SELECT state FROM connection
WHERE workspace_id = $1 AND provider = 'SLACK' AND source_key = $2
ORDER BY id
FOR SHARE`

const setConnectionState = `
UPDATE connection SET state = $3, updated_at = now() WHERE workspace_id = $1 AND id = $2 AND provider = 'SLACK'`

const (
	eraseTeamMessages = `DELETE FROM slack_message WHERE workspace_id = $1 AND team_id = $2`
	// teamMessageChannels are the channels of the team's mirrored messages (their feed changes
	// are removed with them).
	teamMessageChannels = `SELECT DISTINCT channel_id FROM slack_message WHERE workspace_id = $1 AND team_id = $2`
	eraseTeamTurns      = `DELETE FROM slack_mentor_turn WHERE workspace_id = $1 AND team_id = $2`
	eraseTeamChannels   = `DELETE FROM slack_channel WHERE workspace_id = $1 AND team_id = $2`
)

const submitTurn = `
INSERT INTO slack_mentor_turn (workspace_id, team_id, request_id, channel_id, user_id, ts, thread_ts, text, state, source_event_id)
VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, NULLIF($7, ''), $8, 'SUBMITTED', $9)
ON CONFLICT (workspace_id, team_id, request_id) DO NOTHING
RETURNING 1`

const editTurn = `
UPDATE slack_mentor_turn SET text = $4, state = 'EDITED', edited_ts = $5, source_event_id = $6, updated_at = now()
WHERE workspace_id = $1 AND team_id = $2 AND request_id = $3 AND state IN ('SUBMITTED', 'EDITED')
  AND (edited_ts IS NULL OR edited_ts::numeric < $5::numeric)`

const deleteTurn = `
UPDATE slack_mentor_turn SET state = 'DELETED', text = '', source_event_id = $4, updated_at = now()
WHERE workspace_id = $1 AND team_id = $2 AND request_id = $3 AND state <> 'DELETED'`

const stopSession = `
UPDATE slack_mentor_turn SET state = 'STOPPED', source_event_id = $5, updated_at = now()
WHERE workspace_id = $1 AND team_id = $2 AND channel_id = $3
  AND ($4 = '' OR thread_ts = $4 OR ts = $4)
  AND state IN ('SUBMITTED', 'EDITED')`

const homeSummary = `
SELECT (SELECT count(*) FROM slack_channel WHERE workspace_id = $1 AND team_id = $2 AND consent_state = 'GRANTED'),
       (SELECT count(*) FROM slack_mentor_turn WHERE workspace_id = $1 AND team_id = $2 AND user_id = $3
                                                AND state IN ('SUBMITTED', 'EDITED'))`

// Reads of the read API; each binds the workspace.

const countChannels = `SELECT count(*) FROM slack_channel WHERE workspace_id = $1`

const listChannels = `
SELECT team_id, id, name, consent_state FROM slack_channel WHERE workspace_id = $1
ORDER BY name, id LIMIT $2 OFFSET $3`

const countMessages = `
SELECT count(*) FROM slack_message WHERE workspace_id = $1 AND channel_id = $2 AND NOT deleted`

const listMessages = `
SELECT team_id, channel_id, ts, coalesce(thread_ts, ''), coalesce(user_id, ''), text, posted_at,
       coalesce(edited_ts, ''), source_event_id
FROM slack_message WHERE workspace_id = $1 AND channel_id = $2 AND NOT deleted
ORDER BY ts::numeric DESC LIMIT $3 OFFSET $4`
