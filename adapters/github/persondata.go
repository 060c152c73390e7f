package github

import "github.com/hephaestus-dev/hephaestus/ports/contract"

// PersonFields declares where GitHub payloads name a person, for person erasure of the inbox
// stores: user objects ({"login","id",…}: sender, user, assignee, requested_reviewer, member,
// account, owner, pusher's and commit authors' "username" is a login too) and commit authors,
// committers and pushers ({"name","email"}). GitHub logins are case-insensitive; ids are
// numbers, matched exactly. A repository's or organization's id equal to the person's id is
// no match: only a user-shaped object's id names a person.
func PersonFields() contract.PersonFields {
	return contract.PersonFields{
		Provider:  Provider,
		Logins:    []string{"login", "username"},
		UserShape: []string{"login"},
		Emails:    []string{"email"},
		Text: []contract.TextRewrite{
			// A trailer line naming the person by e-mail ("Signed-off-by: Name <address>",
			// Co-authored-by, Reviewed-by, …) inside a message goes with the line break before
			// it; as the first line, with the line break after it.
			{Pattern: `\n[ \t]*[A-Za-z][A-Za-z-]*-[Bb][Yy]:[^\n]*(?:{emails})[^\n]*`, Replacement: ``},
			{Pattern: `^[ \t]*[A-Za-z][A-Za-z-]*-[Bb][Yy]:[^\n]*(?:{emails})[^\n]*\n?`, Replacement: ``},
			// The person's e-mail address anywhere else in text (not within a longer address).
			{Pattern: `(^|[^A-Za-z0-9._%+-])(?:{emails})($|[^A-Za-z0-9_.-]|\.[^A-Za-z0-9_-]|\.$)`, Replacement: `${1}` + contract.ErasedEmail + `${2}`},
			// "@login" in someone else's text.
			{Pattern: `(^|[^A-Za-z0-9_-])@(?:{logins})($|[^A-Za-z0-9_-])`, Replacement: `${1}@ghost${2}`},
			// A string that is the login or starts with it as the owner segment
			// ("login/repo"), and the first path segment of a URL ("https://host/login/…").
			{Pattern: `^([A-Za-z][A-Za-z0-9+.-]*://[^/]+/)?(?:{logins})($|[/?#])`, Replacement: `${1}ghost${2}`},
		},
	}
}
