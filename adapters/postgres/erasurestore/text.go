package erasurestore

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// The inbox keeps the deliveries of other people that mention the person or name a resource
// by the person's login (a comment "@octocat", an event about the repository octocat/app): the
// provider's ports.TextRewrite declarations rewrite their payloads' JSON text in the inbox
// step, after the deletion of the deliveries that name the person, with the same boundary.

// textRewrites are the rewrites of f for scope: the patterns with the scope's logins, e-mail
// addresses and ids substituted (escaped, lower case) and their replacements. A rewrite whose placeholder has no
// value is left out.
func textRewrites(f ports.PersonFields, scope erasure.Scope) (patterns, replacements []string) {
	var logins, ids, emails []string
	for _, i := range scope.Identities() {
		if i.Email() != "" {
			emails = append(emails, regexp.QuoteMeta(strings.ToLower(i.Email())))
		}
		if i.Login() != "" {
			logins = append(logins, regexp.QuoteMeta(strings.ToLower(i.Login())))
		}
		if i.ID() != "" {
			ids = append(ids, regexp.QuoteMeta(strings.ToLower(i.ID())))
		}
	}
	for _, t := range f.Text {
		p := t.Pattern
		if strings.Contains(p, "{logins}") {
			if len(logins) == 0 {
				continue
			}
			p = strings.ReplaceAll(p, "{logins}", strings.Join(logins, "|"))
		}
		if strings.Contains(p, "{emails}") {
			if len(emails) == 0 {
				continue
			}
			p = strings.ReplaceAll(p, "{emails}", strings.Join(emails, "|"))
		}
		if strings.Contains(p, "{ids}") {
			if len(ids) == 0 {
				continue
			}
			p = strings.ReplaceAll(p, "{ids}", strings.Join(ids, "|"))
		}
		patterns = append(patterns, p)
		replacements = append(replacements, t.Replacement)
	}
	return patterns, replacements
}

// rewriteSQL rewrites, in one store, the payloads of the request's provider and namespace up
// to the boundary that match one of n patterns. $1 erasure id, $2 boundary, $3 patterns,
// $4 replacements (text[]).
func rewriteSQL(storeFilter string, n int) string {
	expr := `e.payload::text`
	for i := 1; i <= n; i++ {
		expr = `regexp_replace(` + expr + `, ($3::text[])[` + strconv.Itoa(i) + `], ($4::text[])[` + strconv.Itoa(i) + `], 'gi')`
	}
	return `
UPDATE provider_event e SET payload = (` + expr + `)::jsonb
FROM inbox_erasure r
WHERE r.id = $1
  AND e.id <= $2
  AND ` + storeFilter + `
  AND ` + inNamespace("r.provider", "r.source_server_url") + `
  AND EXISTS (SELECT 1 FROM unnest($3::text[]) AS p(x) WHERE e.payload::text ~* p.x)`
}

// countRewrites is the SQL that counts the payloads rewriteSQL would rewrite, per store: those
// of the provider and namespace that match a pattern and do not name the person (those are
// deleted). $1 provider, $2 source server URL, $3 patterns, $4 identities (jsonb array).
func countRewrites(f ports.PersonFields) string {
	return `
SELECT count(*) FILTER (WHERE e.workspace_id IS NOT NULL), count(*) FILTER (WHERE e.workspace_id IS NULL)
FROM provider_event e
WHERE ` + inNamespace("$1", "$2") + `
  AND EXISTS (SELECT 1 FROM unnest($3::text[]) AS p(x) WHERE e.payload::text ~* p.x)
  AND NOT ` + namesPerson(f, "e.payload", "$4::jsonb")
}
