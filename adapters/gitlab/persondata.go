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
	}
}
