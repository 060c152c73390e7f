package gitlab

import "github.com/hephaestus-dev/hephaestus/ports/contract"

// PersonFields declares where GitLab payloads name a person, for person erasure of the inbox
// stores: user objects ({"id","username","name","email"}: user, author, assignees, reviewers),
// the push and system hooks' flat user_username / user_email, and the numeric references
// user_id and author_id. GitLab usernames and e-mail addresses are case-insensitive.
func PersonFields() contract.PersonFields {
	return contract.PersonFields{
		Provider:   Provider,
		Logins:     []string{"username", "user_username"},
		UserShape:  []string{"username"},
		References: []string{"user_id", "author_id"},
		Emails:     []string{"email", "user_email"},
		Text: []contract.TextRewrite{
			// A trailer line naming the person by e-mail ("Signed-off-by: Name <address>",
			// Co-authored-by, Reviewed-by, …) inside a message goes with the line break before
			// it; as the first line, with the line break after it.
			{Pattern: `\n[ \t]*[A-Za-z][A-Za-z-]*-[Bb][Yy]:[^\n]*(?:{emails})[^\n]*`, Replacement: ``},
			{Pattern: `^[ \t]*[A-Za-z][A-Za-z-]*-[Bb][Yy]:[^\n]*(?:{emails})[^\n]*\n?`, Replacement: ``},
			// The person's e-mail address anywhere else in text (not within a longer address).
			{Pattern: `(^|[^A-Za-z0-9._%+-])(?:{emails})($|[^A-Za-z0-9_.-]|\.[^A-Za-z0-9_-]|\.$)`, Replacement: `${1}` + contract.ErasedEmail + `${2}`},
			// "@username" in someone else's text; GitLab's Ghost User is "ghost".
			{Pattern: `(^|[^A-Za-z0-9_.-])@(?:{logins})($|[^A-Za-z0-9_-])`, Replacement: `${1}@ghost${2}`},
			// A user namespace: a string that is the username or starts with it as the
			// namespace ("username/project"), and the first path segment of a URL.
			{Pattern: `^([A-Za-z][A-Za-z0-9+.-]*://[^/]+/)?(?:{logins})($|[/?#])`, Replacement: `${1}ghost${2}`},
		},
	}
}
