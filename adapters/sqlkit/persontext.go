package sqlkit

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// Free text the provider itself structures around a person, rewritten by person erasure
// (docs/erasure.md "Personal-data map"):
//   - a mention "@login" in someone else's text becomes "@<tombstone>";
//   - a resource named by the person's login (a user-owned repository's full name
//     "login/repo", a GitLab user namespace "login/project", the first path segment of their
//     URLs "https://host/login/…") keeps its id and its other segments, the login becoming the
//     tombstone;
//   - a trailer line ("Signed-off-by:", "Co-authored-by:", "Reviewed-by:", any "…-by:") that
//     names the person by e-mail address, display name or login is removed;
//   - the person's e-mail address anywhere else in the text (not within a longer address)
//     becomes ErasedEmail.
//
// Names typed in prose ("thanks, Mona") are not recognised (the documented limit).
//
// The fragments read the named parameters TextArgs adds: @mention_re, @path_re, @token_re
// (regular expressions over the logins, matched case-insensitively), @email_re (over the e-mail
// addresses), @emails and @names (text[], lower case).

// ErasedEmail is the address that replaces the person's in free text, as in the inbox
// payloads' rewrites.
const ErasedEmail = contract.ErasedEmail

// noMatch is a regular expression that matches nothing (a person without a login).
const noMatch = `(?!)`

// loginAlternatives is the logins as one escaped alternation, or "" when there is none.
func loginAlternatives(logins []string) string {
	var alts []string
	for _, l := range logins {
		if l != "" {
			alts = append(alts, regexp.QuoteMeta(strings.ToLower(l)))
		}
	}
	return strings.Join(alts, "|")
}

// TextArgs adds the parameters of the text fragments to args: the person's logins (any case),
// e-mail addresses and display names (lower case).
func TextArgs(args pgx.NamedArgs, logins, emails, names []string) pgx.NamedArgs {
	mention, path, token := noMatch, noMatch, noMatch
	if alts := loginAlternatives(logins); alts != "" {
		mention = `(^|[^a-z0-9_-])@(` + alts + `)(?![a-z0-9_-])`
		path = `^([a-z][a-z0-9+.-]*://[^/]+/|)(` + alts + `)(?=/|$|[?#])`
		token = `(^|[^a-z0-9_-])(` + alts + `)($|[^a-z0-9_-])`
	}
	args["mention_re"], args["path_re"], args["token_re"] = mention, path, token
	args["email_re"] = noMatch
	if alts := loginAlternatives(emails); alts != "" {
		args["email_re"] = `(^|[^a-z0-9._%+-])(` + alts + `)(?=$|[^a-z0-9_.-]|\.([^a-z0-9_-]|$))`
	}
	args["emails"], args["names"] = lowerNonEmpty(emails), lowerNonEmpty(names)
	return args
}

func lowerNonEmpty(xs []string) []string {
	out := []string{}
	for _, x := range xs {
		if x = strings.ToLower(strings.TrimSpace(x)); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// namesPersonInLine is true when the text line l names the person by e-mail, display name or
// login token.
func namesPersonInLine(l string) string {
	return `(EXISTS (SELECT 1 FROM unnest(@emails::text[]) AS m(e) WHERE strpos(lower(` + l + `), m.e) > 0)
		OR EXISTS (SELECT 1 FROM unnest(@names::text[]) AS m(n) WHERE strpos(lower(` + l + `), m.n) > 0)
		OR ` + l + ` ~* @token_re)`
}

// trailer is a line of the "Key-by: value" form git and the providers structure.
const trailer = `'^\s*[A-Za-z][A-Za-z-]*-by:'`

// ScrubText is col with the person's mentions replaced by "@"+tombstone, the trailer lines
// naming the person removed and their e-mail address elsewhere replaced by ErasedEmail (NULL
// stays NULL).
func ScrubText(col, tombstone string) string {
	mentioned := `regexp_replace(` + col + `, @mention_re, '\1@` + tombstone + `', 'gi')`
	return `CASE WHEN ` + col + ` IS NULL THEN NULL ELSE regexp_replace(array_to_string(ARRAY(
		SELECT u.l FROM unnest(string_to_array(` + mentioned + `, E'\n')) WITH ORDINALITY AS u(l, n)
		WHERE NOT (u.l ~* ` + trailer + ` AND ` + namesPersonInLine("u.l") + `)
		ORDER BY u.n), E'\n'), @email_re, '\1` + ErasedEmail + `', 'gi') END`
}

// TextNamesPerson is true when ScrubText would change col.
func TextNamesPerson(col string) string {
	return `(` + col + ` ~* @mention_re OR ` + col + ` ~* @email_re OR EXISTS (
		SELECT 1 FROM unnest(string_to_array(` + col + `, E'\n')) AS u(l)
		WHERE u.l ~* ` + trailer + ` AND ` + namesPersonInLine("u.l") + `))`
}

// ScrubPath is col (a full name "owner/name" or a URL) with a first path segment equal to a
// login of the person replaced by tombstone.
func ScrubPath(col, tombstone string) string {
	return `regexp_replace(` + col + `, @path_re, '\1` + tombstone + `', 'i')`
}

// PathNamesPerson is true when ScrubPath would change col.
func PathNamesPerson(col string) string { return `(` + col + ` ~* @path_re)` }

// TextRule is a rule that rewrites the free-text columns texts and the name or URL columns
// paths of table where any of them names the person (the tombstone in place of the login).
func TextRule(table string, texts, paths []string, tombstone string) PersonRule {
	var where, set []string
	for _, c := range texts {
		where = append(where, TextNamesPerson(c))
		set = append(set, c+` = `+ScrubText(c, tombstone))
	}
	for _, c := range paths {
		where = append(where, PathNamesPerson(c))
		set = append(set, c+` = `+ScrubPath(c, tombstone))
	}
	return PersonRule{Table: table, Where: strings.Join(where, " OR "), Set: strings.Join(set, ",\n\t\t")}
}

// CursorPattern matches a login as the owner segment of a full name inside a sync cursor
// (":login/repo"), capturing the separator: replace with '\1' and the tombstone.
func CursorPattern(logins []string) string {
	if alts := loginAlternatives(logins); alts != "" {
		return `(:)(` + alts + `)(?=/)`
	}
	return noMatch
}
