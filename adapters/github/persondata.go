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
	}
}
