package erasure

// The live predicate of person erasure, built from three fragments so preview, start and every
// pass match with exactly the same rule:
//
//   - provider: the row's provider is the request's;
//   - namespace: the row's Hephaestus-Source-Server-Url (set by admission from the connection,
//     never from the request) is the request's registered source namespace, a trailing '/'
//     ignored on both sides; the same person under another namespace is not matched;
//   - person: the payload names one of the identities (personPath below).
//
// Identity values reach jsonpath only as variables (the vars argument of jsonb_path_exists),
// never by concatenation into SQL or jsonpath text.

// personPath matches an object anywhere in the payload (.** includes the root) that
//   - has login or username equal to the identity's login; or
//   - has id equal to the identity's id (as text, or as a number when the id is numeric) and
//     is user-shaped: it also has a login, username or name (a repository id equal to the
//     person's id, or any bare id elsewhere, does not match);
//   - or has a field user, user_id, actorId or author_id equal to the identity's id (Slack
//     "user":"U…", Outline "actorId", GitLab "user_id"/"author_id", which GitLab sends as
//     numbers).
//
// strict mode: a member accessor on something that is not an object, or a missing member, is an
// error, which a filter treats as unknown (not a match). Lax mode would unwrap arrays, so an
// array holding a repository {"id":…} and some other user's {"login":…} would look like one
// user-shaped object. An absent half of an identity is passed as [] (an empty sequence), which
// equals nothing, so it can never match a JSON null in a payload.
const personPath = `strict $.** ? (
	@.login == $login || @.username == $login
	|| ((@.id == $id || @.id == $idn) && (exists(@.login) || exists(@.username) || exists(@.name)))
	|| @.user == $id || @.user == $idn || @.user_id == $id || @.user_id == $idn
	|| @.actorId == $id || @.actorId == $idn || @.author_id == $id || @.author_id == $idn)`

// pairPath finds the user-shaped objects that name an identity and carry both halves of it:
// their (id, login or username) pairs freeze the identity scope at start.
const pairPath = `strict $.** ? (
	exists(@.id) && (exists(@.login) || exists(@.username))
	&& (@.login == $login || @.username == $login || @.id == $id || @.id == $idn))`

// varsOf turns one stored identity {"id":…,"login":…} (the SQL expression elem) into the
// jsonpath variables of personPath and pairPath. idn is the id as a JSON number when it is an
// integer in canonical form (GitHub and GitLab send numeric ids), otherwise the id itself.
func varsOf(elem string) string {
	return `jsonb_build_object(
		'login', coalesce(` + elem + `->'login', '[]'::jsonb),
		'id', coalesce(` + elem + `->'id', '[]'::jsonb),
		'idn', CASE WHEN ` + elem + `->>'id' ~ '^(0|-?[1-9][0-9]{0,30})$'
		            THEN to_jsonb((` + elem + `->>'id')::numeric)
		            ELSE coalesce(` + elem + `->'id', '[]'::jsonb) END)`
}

// namesPerson is the person fragment for payload expression payload and the identities array
// expression identities.
func namesPerson(payload, identities string) string {
	return `EXISTS (SELECT 1 FROM jsonb_array_elements(` + identities + `) AS i(v)
		WHERE jsonb_path_exists(` + payload + `, '` + personPath + `', ` + varsOf("i.v") + `))`
}

// inNamespace is the provider and namespace fragment.
func inNamespace(prov, url string) string {
	return `e.provider = ` + prov + `
		AND rtrim(e.headers->>'Hephaestus-Source-Server-Url', '/') = rtrim(` + url + `, '/')`
}

// Parameters of previewMatches, discoverPairs and freezeKeys: $1 provider, $2 source server
// URL, $3 identities (jsonb array).
var (
	// previewMatches counts the current matches of each store; it deletes nothing and locks
	// nothing (a plain read: the answer is a moment's count of a live store).
	previewMatches = `
SELECT count(*) FILTER (WHERE e.workspace_id IS NOT NULL),
       count(*) FILTER (WHERE e.workspace_id IS NULL)
FROM provider_event e
WHERE ` + inNamespace("$1", "$2") + `
  AND ` + namesPerson("e.payload", "$3::jsonb")

	// discoverPairs lists the (id, login) pairs of the user-shaped objects that name an
	// identity, in rows of the request's provider and namespace. Bounded: the domain refuses a
	// scope that grows beyond its limit anyway.
	discoverPairs = `
SELECT DISTINCT o->>'id', coalesce(o->>'login', o->>'username')
FROM provider_event e
CROSS JOIN jsonb_array_elements($3::jsonb) AS i(v)
CROSS JOIN LATERAL jsonb_path_query(e.payload, '` + pairPath + `', ` + varsOf("i.v") + `) AS o
WHERE ` + inNamespace("$1", "$2") + `
  AND jsonb_typeof(o->'id') IN ('string', 'number')
  AND jsonb_typeof(coalesce(o->'login', o->'username')) = 'string'
LIMIT 5000`
)

const (
	insertErasure = `
INSERT INTO inbox_erasure (provider, source_server_url, identities, requested_by)
VALUES ($1, $2, $3, $4)
RETURNING id, state, passes, created_at`

	// erasureColumns is what a request is restored from.
	erasureColumns = `r.id, r.provider, r.source_server_url, r.identities, r.state, r.passes, r.requested_by, r.created_at`

	selectErasure = `SELECT ` + erasureColumns + ` FROM inbox_erasure r WHERE r.id = $1`

	// lockErasureForResume waits while a runner holds the request (its FOR NO KEY UPDATE
	// conflicts with FOR UPDATE), so a resume lands after that runner stored its final state
	// and cannot be lost between the runner's last pass and its DONE.
	lockErasureForResume = `SELECT ` + erasureColumns + ` FROM inbox_erasure r WHERE r.id = $1 FOR UPDATE`

	writeResume = `UPDATE inbox_erasure SET passes = $2, state = $3, updated_at = clock_timestamp() WHERE id = $1`

	// holdRunningErasure takes the oldest RUNNING request no runner holds. FOR NO KEY UPDATE:
	// it excludes every other runner (SKIP LOCKED passes over a held request, so one server
	// works one request) and a resume, yet lets the pass transactions insert receipts that
	// reference the row (their foreign-key check takes KEY SHARE on it, which FOR UPDATE
	// would block: the runner would wait for itself). The lock ends with the runner's session,
	// so a request whose server died is held again by another runner.
	holdRunningErasure = `
SELECT ` + erasureColumns + `
FROM inbox_erasure r
WHERE r.state = 'RUNNING'
ORDER BY r.id
LIMIT 1
FOR NO KEY UPDATE SKIP LOCKED`

	writeErasureState = `UPDATE inbox_erasure SET state = $2, updated_at = clock_timestamp() WHERE id = $1`

	selectReceipts = `
SELECT store, pass, deleted, boundary, at
FROM inbox_erasure_receipt
WHERE erasure_id = $1
ORDER BY pass, CASE store WHEN 'workspace-inbox' THEN 0 ELSE 1 END`
)

// freezeKeys stores the keys of every row the (grown) scope matches at start: $1 erasure id.
var freezeKeys = `
INSERT INTO inbox_erasure_key (erasure_id, workspace_id, provider, delivery_key)
SELECT r.id, e.workspace_id, e.provider, e.delivery_key
FROM inbox_erasure r
JOIN provider_event e ON ` + inNamespace("r.provider", "r.source_server_url") + `
WHERE r.id = $1
  AND ` + namesPerson("e.payload", "r.identities") + `
ON CONFLICT DO NOTHING`

// The copy fence (migration 00003 explains the protocol from the writers' side).
const (
	// raiseFence is committed on its own before the deletion: an UPDATE of non-key columns
	// takes FOR NO KEY UPDATE, which does not conflict with the FOR KEY SHARE of running
	// steps, so it does not wait for them; every fenced write that starts after this commit
	// reads in_progress and rolls back before it waits (retried later in order).
	raiseFence = `
UPDATE inbox_erasure_fence
SET in_progress = true, erasure_id = $1, changed_at = clock_timestamp()
WHERE name = 'inbox'`

	// lockFence is the first statement of the deletion transaction. FOR UPDATE conflicts with
	// FOR KEY SHARE, so it waits for the steps that took the fence before the flag was raised
	// (and only for them: later steps see the flag and leave), and holds every new step off
	// until the deletion commits.
	lockFence = `SELECT in_progress FROM inbox_erasure_fence WHERE name = 'inbox' FOR UPDATE`

	// passBoundary is the highest committed row id when the pass begins, read before the
	// fence is raised. A pass deletes no row above it, so what it covers is fixed when it
	// starts: every delivery stored before the pass has an id at or below it, and a delivery
	// admitted during the pass (admission keeps running; identities are allocated at insert,
	// so a later admission gets a higher id) is left for the next pass, however long the pass
	// waits for the fence. (An id allocated before the read whose admission commits only
	// during the pass is at or below the boundary: it is erased if it committed before the
	// deletion's snapshot, else left to the next pass as well.)
	passBoundary = `SELECT coalesce(max(id), 0) FROM provider_event`

	// setPassLockTimeout bounds the lock waits of the deletion after the fence is held.
	setPassLockTimeout = `SELECT set_config('lock_timeout', '30s', true)`

	insertReceipt = `
INSERT INTO inbox_erasure_receipt (erasure_id, store, pass, deleted, boundary, at)
VALUES ($1, $2, $3, $4, $5, clock_timestamp())
RETURNING at`

	// lowerFence ends the pass in its deletion transaction. Only this request's flag is
	// lowered: another request that raised the fence meanwhile lowers its own.
	lowerFence = `
UPDATE inbox_erasure_fence
SET in_progress = false, erasure_id = NULL, changed_at = clock_timestamp()
WHERE name = 'inbox' AND erasure_id = $1`

	// lowerStaleFence lowers a flag whose request is no longer RUNNING (its pass died between
	// raising and lowering, and the request was then ended): a RUNNING request is held again by
	// a runner, whose next pass lowers the flag itself. SKIP LOCKED: a pass that holds the
	// fence right now is not waited for.
	lowerStaleFence = `
UPDATE inbox_erasure_fence f
SET in_progress = false, erasure_id = NULL, changed_at = clock_timestamp()
WHERE f.name IN (SELECT name FROM inbox_erasure_fence WHERE name = 'inbox' FOR NO KEY UPDATE SKIP LOCKED)
  AND f.in_progress
  AND NOT EXISTS (SELECT 1 FROM inbox_erasure r WHERE r.id = f.erasure_id AND r.state = 'RUNNING')`
)

// deleteMatches deletes, in one store, the rows of every state (LEASED included: a handler
// still running on one stops at its next fenced write with erased-during-processing) that the
// live predicate or the frozen keys match, up to the pass boundary; their steps cascade.
// $1 erasure id, $2 boundary. The DELETE waits briefly for rows a claim, renewal, outcome or
// reaper statement holds; it never waits for a step, since the fence lock already did.
func deleteMatches(storeFilter string) string {
	return `
DELETE FROM provider_event e
USING inbox_erasure r
WHERE r.id = $1
  AND e.id <= $2
  AND ` + storeFilter + `
  AND ((` + inNamespace("r.provider", "r.source_server_url") + `
        AND ` + namesPerson("e.payload", "r.identities") + `)
       OR EXISTS (SELECT 1 FROM inbox_erasure_key k
                  WHERE k.erasure_id = r.id
                    AND k.workspace_id IS NOT DISTINCT FROM e.workspace_id
                    AND k.provider = e.provider
                    AND k.delivery_key = e.delivery_key))`
}

var (
	deleteWorkspaceMatches    = deleteMatches("e.workspace_id IS NOT NULL")
	deleteInstallationMatches = deleteMatches("e.workspace_id IS NULL")
)
