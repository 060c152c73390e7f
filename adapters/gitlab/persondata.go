package gitlab

import "github.com/hephaestus-dev/hephaestus/ports"

// PersonFields declares where GitLab payloads name a person, for person erasure of the inbox
// stores: user objects ({"id","username","name","email"}: user, author, assignees, reviewers),
// the push and system hooks' flat user_username / user_email, and the numeric references
// user_id and author_id. GitLab usernames and e-mail addresses are case-insensitive.
func PersonFields() ports.PersonFields {
	return ports.PersonFields{
		Provider:   Provider,
		Logins:     []string{"username", "user_username"},
		UserShape:  []string{"username"},
		References: []string{"user_id", "author_id"},
		Emails:     []string{"email", "user_email"},
		Text: []ports.TextRewrite{
			// A trailer line naming the person by e-mail ("\nSigned-off-by: Name <address>",
			// Co-authored-by, Reviewed-by, …) inside a message: JSON text, so the line break is
			// the two characters \n.
			{Pattern: `\\n[ \t]*[a-z][a-z-]*-by:[^"\\]*({emails})[^"\\]*`, Replacement: ``},
			// "@username" in someone else's text; GitLab's Ghost User is "ghost".
			{Pattern: `([^a-z0-9_.-])@({logins})(?![a-z0-9_-])`, Replacement: `\1@ghost`},
			// A user namespace: a string that is the username or starts with it as the
			// namespace ("username/project"), and the first path segment of a URL.
			{Pattern: `("|"[a-z][a-z0-9+.-]*://[^/"]+/)({logins})(?=[/"?#])`, Replacement: `\1ghost`},
		},
	}
}
