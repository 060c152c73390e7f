package erasurestore

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// The live predicate of person erasure, built from three fragments so preview, start and every
// pass match with exactly the same rule:
//
//   - provider: the row's provider is the request's;
//   - namespace: the row's Hephaestus-Source-Server-Url (set by admission from the connection,
//     never from the request) is the request's registered source namespace, a trailing '/'
//     ignored on both sides; the same person under another namespace is not matched;
//   - person: the payload names one of the identities where the provider's own module says its
//     payloads name a person (contract.PersonFields, declared by adapters/<provider>).
//
// Identity values reach SQL only as bind parameters or through the request row, never by
// concatenation; the member names concatenated into the jsonpath and SQL text are the
// providers' compile-time declarations, checked against memberName.

// memberName is what a declared payload member may look like.
var memberName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// matcher is the SQL of one provider's declaration.
type matcher struct {
	preview, discover, freeze, deleteWorkspace, deleteInstallation string
	// countFeed and scrubFeed are the change feed's: see feedNamesPerson.
	countFeed, scrubFeed string
}

// idn is the identity's id as a JSON number when it is an integer in canonical form (GitHub
// and GitLab send numeric ids), else NULL: a JSON id matches the identity as text or as number.
func idn(v string) string {
	return `(CASE WHEN ` + v + `->>'id' ~ '^(0|-?[1-9][0-9]{0,30})$' THEN to_jsonb((` + v + `->>'id')::numeric) END)`
}

// candidates is the jsonpath that walks every object of a payload having one of members
// (strict mode: a member test on something that is not an object is an error, which the filter
// treats as not matching; lax mode would unwrap arrays and merge unrelated objects).
func candidates(members []string) string {
	tests := make([]string, len(members))
	for i, m := range members {
		tests[i] = `exists(@."` + m + `")`
	}
	return `strict $.** ? (` + strings.Join(tests, " || ") + `)`
}

// personCondition is true when object x names identity v by the declaration f:
//   - a login member equals the identity's login, case-insensitively;
//   - x is user-shaped (has a UserShape member) and its id equals the identity's id;
//   - a reference member equals the identity's id;
//   - an email member equals the identity's email, case-insensitively.
//
// A JSON null, an absent half of the identity or a member of another type compares as NULL,
// which is never a match.
func personCondition(f contract.PersonFields, x, v string) string {
	var or []string
	for _, m := range f.Logins {
		or = append(or, `lower(`+x+`->>'`+m+`') = lower(`+v+`->>'login')`)
	}
	if len(f.UserShape) > 0 {
		shape := make([]string, len(f.UserShape))
		for i, m := range f.UserShape {
			shape[i] = x + ` ? '` + m + `'`
		}
		or = append(or, `((`+strings.Join(shape, " OR ")+`) AND (`+x+`->'id' = `+v+`->'id' OR `+x+`->'id' = `+idn(v)+`))`)
	}
	for _, m := range f.References {
		or = append(or, `(`+x+`->'`+m+`' = `+v+`->'id' OR `+x+`->'`+m+`' = `+idn(v)+`)`)
	}
	for _, m := range f.Emails {
		or = append(or, `lower(`+x+`->>'`+m+`') = lower(`+v+`->>'email')`)
	}
	return `(` + strings.Join(or, "\n\t\t OR ") + `)`
}

// members is every member the declaration names, plus id for the user shape.
func members(f contract.PersonFields) []string {
	var all []string
	all = append(all, f.Logins...)
	all = append(all, f.UserShape...)
	all = append(all, f.References...)
	all = append(all, f.Emails...)
	return all
}

func validFields(f contract.PersonFields) error {
	if f.Provider.IsZero() {
		return fmt.Errorf("person fields without a provider")
	}
	all := members(f)
	if len(all) == 0 {
		return fmt.Errorf("person fields of %s name no member", f.Provider)
	}
	if f.Views == nil {
		return fmt.Errorf("person fields of %s declare no views (the change feed could not be scrubbed)", f.Provider)
	}
	all = append(all, viewMembers(*f.Views)...)
	for _, m := range all {
		if !memberName.MatchString(m) {
			return fmt.Errorf("person fields of %s: member %q is not a plain name", f.Provider, m)
		}
	}
	return nil
}

// namesPerson is the person fragment for payload expression payload and the identities array
// expression identities.
func namesPerson(f contract.PersonFields, payload, identities string) string {
	return `EXISTS (SELECT 1
		FROM jsonb_path_query(` + payload + `, '` + candidates(members(f)) + `') AS o(x)
		CROSS JOIN jsonb_array_elements(` + identities + `) AS i(v)
		WHERE ` + personCondition(f, "o.x", "i.v") + `)`
}

// feedTombstone is the data of a change erasure scrubbed.
const feedTombstone = `'{"erased":true}'::jsonb`

// feedNamesPerson is the person fragment of the change feed, whose data is the read API's view
// of an entity rather than a provider payload. It matches by the provider's view declaration
// (contract.PersonFields.Views, derived from the view types' person tags) and, because views also
// carry text the provider structures around people (a repository's full name and URL, an
// @mention, a commit trailer), by every string:
//   - an object with a declared view member naming the identity: an id member equal to its id
//     (as text or number), a login or e-mail member equal to its login or e-mail
//     (case-insensitively), a name member equal to one of names (the display names the
//     provider's payloads pair with the person, see payloadNames);
//   - an object with a declared payload member naming the identity by the provider's rule
//     (personCondition), where an object with a login member counts as user-shaped too;
//   - any string value anywhere that contains the identity's login or id as a token (not
//     within a longer word: "codertocat/hello-world", "@codertocat", "<@U024BE7LH>") or its
//     e-mail address, case-insensitively.
//
// Identity values come only from the identities array expression and names.
func feedNamesPerson(f contract.PersonFields, data, identities, names string) string {
	payload := f
	payload.UserShape = append(append([]string(nil), f.UserShape...), f.Logins...)
	var views []string
	if f.Views != nil {
		for _, m := range f.Views.IDs {
			views = append(views, `(o.x->'`+m+`' = i.v->'id' OR o.x->'`+m+`' = `+idn("i.v")+`)`)
		}
		for _, m := range f.Views.Logins {
			views = append(views, `lower(o.x->>'`+m+`') = lower(i.v->>'login')`)
		}
		for _, m := range f.Views.Emails {
			views = append(views, `lower(o.x->>'`+m+`') = lower(i.v->>'email')`)
		}
		for _, m := range f.Views.Names {
			views = append(views, `lower(o.x->>'`+m+`') = ANY(`+names+`)`)
		}
	}
	viewMatch := ``
	if len(views) > 0 {
		viewMatch = `
		   OR EXISTS (SELECT 1 FROM jsonb_path_query(` + data + `, '` + candidates(viewMembers(*f.Views)) + `') AS o(x)
		              WHERE ` + strings.Join(views, " OR ") + `)`
	}
	return `EXISTS (SELECT 1
		FROM jsonb_array_elements(` + identities + `) AS i(v)
		WHERE EXISTS (SELECT 1 FROM jsonb_path_query(` + data + `, 'strict $.** ? (@.type() == "string")') AS s(x)
		              WHERE lower(s.x #>> '{}') ~ ` + tokenPattern(`i.v->>'login'`) + `
		                 OR lower(s.x #>> '{}') ~ ` + tokenPattern(`i.v->>'id'`) + `
		                 OR strpos(lower(s.x #>> '{}'), lower(i.v->>'email')) > 0)
		   OR EXISTS (SELECT 1 FROM jsonb_path_query(` + data + `, '` + candidates(members(payload)) + `') AS o(x)
		              WHERE ` + personCondition(payload, "o.x", "i.v") + `)` + viewMatch + `)`
}

// tokenPattern is the regular expression (over lower-case text) that finds the SQL text value
// v as a token: not preceded or followed by a letter, digit, '_' or '-'. Every other character
// of v is escaped; an empty or NULL value yields NULL, which matches nothing.
func tokenPattern(v string) string {
	return `('(^|[^a-z0-9_-])' || regexp_replace(lower(nullif(` + v + `, '')), '([^a-z0-9])', '\\\1', 'g') || '($|[^a-z0-9_-])')`
}

// viewMembers is every member of a view declaration.
func viewMembers(v contract.PersonViews) []string {
	var all []string
	all = append(all, v.IDs...)
	all = append(all, v.Logins...)
	all = append(all, v.Emails...)
	all = append(all, v.Names...)
	return all
}

// payloadNames is the lower-case display names ("name" members) of the objects of the
// provider's stored payloads in the namespace prov/url that name an identity of identities by
// the provider's rule (commit authors {"name","email"}, user objects): a view naming the person
// by display name only (a GitLab commit's authorName) is found by them. The inbox stores are
// erased after the feed, so the payloads are still there.
func payloadNames(f contract.PersonFields, prov, url, identities string) string {
	return `(SELECT coalesce(array_agg(DISTINCT lower(o.x->>'name')), '{}')
	FROM provider_event e
	CROSS JOIN LATERAL jsonb_path_query(e.payload, '` + candidates(members(f)) + `') AS o(x)
	CROSS JOIN jsonb_array_elements(` + identities + `) AS i(v)
	WHERE ` + inNamespace(prov, url) + `
	  AND jsonb_typeof(o.x->'name') = 'string'
	  AND ` + personCondition(f, "o.x", "i.v") + `)`
}

// inNamespace is the provider and namespace fragment. url is canonical (domain/erasure.NewScope,
// migration 00045 for stored requests); a row's header is too, since admission copies it from
// the canonical connection, except in rows admitted before migration 00045, which
// canonical_source_url (the migration's SQL form of the same rule) reads in that spelling.
func inNamespace(prov, url string) string {
	return `e.provider = ` + prov + `
		AND (e.headers->>'Hephaestus-Source-Server-Url' = ` + url + `
		     OR canonical_source_url(e.headers->>'Hephaestus-Source-Server-Url') = ` + url + `)`
}

// newMatcher builds the SQL of one provider's declaration. Parameters of preview and
// discover: $1 provider, $2 source server URL, $3 identities (jsonb array); of freeze: $1
// erasure id; of the deletions: $1 erasure id, $2 boundary.
func newMatcher(f contract.PersonFields) (matcher, error) {
	if err := validFields(f); err != nil {
		return matcher{}, err
	}
	m := matcher{
		// preview counts the current matches of each store; it deletes nothing and locks
		// nothing (a plain read: the answer is a moment's count of a live store).
		preview: `
SELECT count(*) FILTER (WHERE e.workspace_id IS NOT NULL),
       count(*) FILTER (WHERE e.workspace_id IS NULL)
FROM provider_event e
WHERE ` + inNamespace("$1", "$2") + `
  AND ` + namesPerson(f, "e.payload", "$3::jsonb"),

		// freeze stores the keys of every row the (grown) scope matches at start.
		freeze: `
INSERT INTO inbox_erasure_key (erasure_id, workspace_id, provider, delivery_key)
SELECT r.id, e.workspace_id, e.provider, e.delivery_key
FROM inbox_erasure r
JOIN provider_event e ON ` + inNamespace("r.provider", "r.source_server_url") + `
WHERE r.id = $1
  AND ` + namesPerson(f, "e.payload", "r.identities") + `
ON CONFLICT DO NOTHING`,
		deleteWorkspace:    deleteMatches(f, "e.workspace_id IS NOT NULL"),
		deleteInstallation: deleteMatches(f, "e.workspace_id IS NULL"),

		// countFeed counts the changes scrubFeed would rewrite. $1 workspaces (bigint[]), $2
		// type prefix, $3 identities (jsonb array), $4 provider, $5 source server URL.
		countFeed: `
SELECT count(*)
FROM workspace_change c
CROSS JOIN (SELECT ` + payloadNames(f, "$4", "$5", "$3::jsonb") + ` AS names) n
WHERE c.workspace_id = ANY($1::bigint[])
  AND starts_with(c.type, $2)
  AND c.data <> ` + feedTombstone + `
  AND ` + feedNamesPerson(f, "c.data", "$3::jsonb", "n.names"),

		// scrubFeed replaces the data of every change of the provider in the covered
		// workspaces that names the person by the tombstone; id, xid, type, subject and
		// occurred_at stay, so cursors and order stay as consumers saw them. $1 erasure id,
		// $2 workspaces (bigint[]), $3 type prefix.
		scrubFeed: `
UPDATE workspace_change c
SET data = ` + feedTombstone + `
FROM inbox_erasure r
CROSS JOIN LATERAL (SELECT ` + payloadNames(f, "r.provider", "r.source_server_url", "r.identities") + ` AS names) n
WHERE r.id = $1
  AND c.workspace_id = ANY($2::bigint[])
  AND starts_with(c.type, $3)
  AND c.data <> ` + feedTombstone + `
  AND ` + feedNamesPerson(f, "c.data", "r.identities", "n.names"),
	}
	if len(f.UserShape) > 0 && len(f.Logins) > 0 {
		// discover lists the (id, login) pairs of the user-shaped objects that name an
		// identity, in rows of the request's provider and namespace. Bounded: the domain
		// refuses a scope that grows beyond its limit anyway.
		login := make([]string, len(f.Logins))
		for i, l := range f.Logins {
			login[i] = `o.x->'` + l + `'`
		}
		loginExpr := `coalesce(` + strings.Join(login, ", ") + `)`
		m.discover = `
SELECT DISTINCT o.x->>'id', ` + loginExpr + ` #>> '{}'
FROM provider_event e
CROSS JOIN LATERAL jsonb_path_query(e.payload, '` + candidates(f.UserShape) + `') AS o(x)
CROSS JOIN jsonb_array_elements($3::jsonb) AS i(v)
WHERE ` + inNamespace("$1", "$2") + `
  AND jsonb_typeof(o.x->'id') IN ('string', 'number')
  AND jsonb_typeof(` + loginExpr + `) = 'string'
  AND ` + personCondition(f, "o.x", "i.v") + `
LIMIT 5000`
	}
	return m, nil
}

// deleteMatches deletes, in one store, the rows of every state (LEASED included: a handler
// still running on one stops at its next fenced write with erased-during-processing) that the
// live predicate or the frozen keys match, up to the pass boundary; their steps cascade.
// $1 erasure id, $2 boundary. The DELETE waits briefly for rows a claim, renewal, outcome or
// reaper statement holds; it never waits for a step, since the fence lock already did.
func deleteMatches(f contract.PersonFields, storeFilter string) string {
	return `
DELETE FROM provider_event e
USING inbox_erasure r
WHERE r.id = $1
  AND e.id <= $2
  AND ` + storeFilter + `
  AND ((` + inNamespace("r.provider", "r.source_server_url") + `
        AND ` + namesPerson(f, "e.payload", "r.identities") + `)
       OR EXISTS (SELECT 1 FROM inbox_erasure_key k
                  WHERE k.erasure_id = r.id
                    AND k.workspace_id IS NOT DISTINCT FROM e.workspace_id
                    AND k.provider = e.provider
                    AND k.delivery_key = e.delivery_key))`
}

// knownNamespace answers whether this instance has the namespace $2 for provider $1: a
// connection of the provider registered with that source (in any state: an uninstalled
// connection's mirror and deliveries may still hold the person), or the installation namespace
// $3 (admission's default source of installation rows; ” when the provider has none).
//
// Both sides are canonical: connections store their URL so (management, migration 00045), $2
// is the scope's and $3 admission's configured default, canonicalised at start.
const knownNamespace = `
SELECT EXISTS (SELECT 1 FROM connection c
               WHERE c.provider = $1 AND c.source_server_url = $2)
    OR ($3 <> '' AND $3 = $2)`

// namespaceWorkspaces lists the workspaces whose mirror of provider $1 may hold data of the
// namespace $2: those with a connection of the provider registered with that source.
const namespaceWorkspaces = `
SELECT coalesce(array_agg(DISTINCT c.workspace_id ORDER BY c.workspace_id), '{}')
FROM connection c
WHERE c.provider = $1 AND c.source_server_url = $2`

const (
	insertErasure = `
INSERT INTO inbox_erasure (provider, source_server_url, identities, requested_by)
VALUES ($1, $2, $3, $4)
RETURNING id, state, passes, retries, created_at`

	// erasureColumns is what a request is restored from.
	erasureColumns = `r.id, r.provider, r.source_server_url, r.identities, r.state, r.passes, r.retries, r.requested_by, r.created_at`

	selectErasure = `SELECT ` + erasureColumns + ` FROM inbox_erasure r WHERE r.id = $1`

	// lockErasureForResume waits while a runner holds the request (its FOR NO KEY UPDATE
	// conflicts with FOR UPDATE), so a resume lands after that runner stored its final state
	// and cannot be lost between the runner's last pass and its DONE.
	lockErasureForResume = `SELECT ` + erasureColumns + ` FROM inbox_erasure r WHERE r.id = $1 FOR UPDATE`

	// writeResume also clears the retry time: a resumed request is worked at once.
	writeResume = `UPDATE inbox_erasure SET passes = $2, state = $3, retries = $4, retry_at = NULL, updated_at = clock_timestamp() WHERE id = $1`

	// holdRunningErasure takes the oldest RUNNING request no runner holds whose retry time (a
	// pass added because rows could not be rewritten) has come. FOR NO KEY UPDATE:
	// it excludes every other runner (SKIP LOCKED passes over a held request, so one server
	// works one request) and a resume, yet lets the pass transactions insert receipts that
	// reference the row (their foreign-key check takes KEY SHARE on it, which FOR UPDATE
	// would block: the runner would wait for itself). The lock ends with the runner's session,
	// so a request whose server died is held again by another runner.
	holdRunningErasure = `
SELECT ` + erasureColumns + `
FROM inbox_erasure r
WHERE r.state = 'RUNNING'
  AND (r.retry_at IS NULL OR r.retry_at <= clock_timestamp())
ORDER BY r.id
LIMIT 1
FOR NO KEY UPDATE SKIP LOCKED`

	// writeErasureState stores the request as its runner lets go of it: state, passes asked
	// for, retries, and the retry time of a RUNNING request ($5 milliseconds from now; none
	// when 0).
	writeErasureState = `
UPDATE inbox_erasure
SET state = $2, passes = $3, retries = $4,
    retry_at = CASE WHEN $5::bigint > 0 THEN clock_timestamp() + $5::bigint * interval '1 millisecond' END,
    updated_at = clock_timestamp()
WHERE id = $1`

	selectReceipts = `
SELECT store, pass, deleted, boundary, at, failed_rows
FROM inbox_erasure_receipt
WHERE erasure_id = $1
ORDER BY pass, at, CASE store WHEN 'workspace-inbox' THEN 1 WHEN 'installation-inbox' THEN 2 ELSE 0 END`

	// selectScope reads the frozen scope of a request for a pass of a mirror store.
	selectScope = `SELECT provider, source_server_url, identities FROM inbox_erasure WHERE id = $1`
)

// The copy fence (migration 00003 explains the protocol from the writers' side).
const (
	// raiseFence is committed on its own before the deletion: an UPDATE of non-key columns
	// takes FOR NO KEY UPDATE, which does not conflict with the FOR KEY SHARE of running
	// steps, so it does not wait for them; every fenced write that starts after this commit
	// reads in_progress and rolls back before it waits (retried later in order). The request
	// joins the fence's holders (migration 00021): the flag stays raised while any request is
	// within a pass, so two servers' erasures cannot lower each other's fence between stores.
	raiseFence = `
UPDATE inbox_erasure_fence
SET in_progress = true, erasure_id = $1,
    holders = array_append(array_remove(holders, $1::bigint), $1::bigint), changed_at = clock_timestamp()
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
INSERT INTO inbox_erasure_receipt (erasure_id, store, pass, deleted, boundary, at, failed_rows)
VALUES ($1, $2, $3, $4, $5, clock_timestamp(), $6)
RETURNING at`

	// lowerFence ends the pass of request $1 in its last store's transaction: the request
	// leaves the holders, and the flag is lowered only when no other request is within a pass
	// (erasure_id then names a remaining holder). A flag raised in the request's name without
	// holders (a process that died before migration 00021's holders) is lowered too.
	lowerFence = `
UPDATE inbox_erasure_fence
SET holders = array_remove(holders, $1::bigint),
    in_progress = cardinality(array_remove(holders, $1::bigint)) > 0,
    erasure_id = (array_remove(holders, $1::bigint))[1],
    changed_at = clock_timestamp()
WHERE name = 'inbox' AND ($1::bigint = ANY(holders) OR erasure_id = $1)`

	// lowerStaleFence drops the holders whose request is no longer RUNNING (a pass died between
	// raising and lowering, and the request was then ended) and lowers the flag when no holder
	// is left: a RUNNING holder is held again by a runner, whose pass lowers the flag itself. A
	// flag without holders counts erasure_id as its holder. SKIP LOCKED: a pass that holds the
	// fence right now is not waited for.
	lowerStaleFence = `
WITH f AS (
	SELECT name, CASE WHEN cardinality(holders) = 0 AND erasure_id IS NOT NULL THEN ARRAY[erasure_id] ELSE holders END AS was
	FROM inbox_erasure_fence WHERE name = 'inbox' AND in_progress
	FOR NO KEY UPDATE SKIP LOCKED
), live AS (
	SELECT f.name, f.was, ARRAY(SELECT h FROM unnest(f.was) AS h
	                            WHERE EXISTS (SELECT 1 FROM inbox_erasure r WHERE r.id = h AND r.state = 'RUNNING')) AS h
	FROM f
)
UPDATE inbox_erasure_fence t
SET holders = live.h, in_progress = cardinality(live.h) > 0, erasure_id = live.h[1], changed_at = clock_timestamp()
FROM live
WHERE t.name = live.name AND (cardinality(live.h) < cardinality(live.was) OR cardinality(live.was) = 0)`
)
