package github

import "github.com/hephaestus-dev/hephaestus/ports"

// PersonFields declares where GitHub payloads name a person, for person erasure of the inbox
// stores: user objects ({"login","id",…}: sender, user, assignee, requested_reviewer, member,
// account, owner, pusher's and commit authors' "username" is a login too) and commit authors,
// committers and pushers ({"name","email"}). GitHub logins are case-insensitive; ids are
// numbers, matched exactly. A repository's or organization's id equal to the person's id is
// no match: only a user-shaped object's id names a person.
func PersonFields() ports.PersonFields {
	return ports.PersonFields{
		Provider:  Provider,
		Logins:    []string{"login", "username"},
		UserShape: []string{"login"},
		Emails:    []string{"email"},
		Text: []ports.TextRewrite{
			// A trailer line naming the person by e-mail ("\nSigned-off-by: Name <address>",
			// Co-authored-by, Reviewed-by, …) inside a message: JSON text, so the line break is
			// the two characters \n.
			{Pattern: `\\n[ \t]*[a-z][a-z-]*-by:[^"\\]*({emails})[^"\\]*`, Replacement: ``},
			// "@login" in someone else's text.
			{Pattern: `([^a-z0-9_-])@({logins})(?![a-z0-9_-])`, Replacement: `\1@ghost`},
			// A string that is the login or starts with it as the owner segment
			// ("login/repo"), and the first path segment of a URL ("https://host/login/…").
			{Pattern: `("|"[a-z][a-z0-9+.-]*://[^/"]+/)({logins})(?=[/"?#])`, Replacement: `\1ghost`},
		},
	}
}
