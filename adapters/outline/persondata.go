package outline

import "github.com/hephaestus-dev/hephaestus/ports/contract"

// PersonFields declares where Outline payloads name a person, for person erasure of the inbox
// stores: the envelope's actorId, a model's userId, and user objects ({"id","name",
// "avatarUrl"}: createdBy, updatedBy) and their e-mail addresses. Outline ids are UUIDs,
// matched exactly.
func PersonFields() contract.PersonFields {
	return contract.PersonFields{
		Provider:   Provider,
		UserShape:  []string{"avatarUrl"},
		References: []string{"actorId", "userId"},
		Emails:     []string{"email"},
		Text: []contract.TextRewrite{
			// A mention "@[Name](mention://<id>/user/<user id>)" in a document's text, then
			// any other occurrence of the user id.
			{Pattern: `@\[[^\]]*\]\(mention://([^)/]*)/user/(?:{ids})\)`, Replacement: `@[erased](mention://${1}/user/00000000-0000-0000-0000-000000000000)`},
			{Pattern: `(^|[^A-Za-z0-9-])(?:{ids})($|[^A-Za-z0-9-])`, Replacement: `${1}00000000-0000-0000-0000-000000000000${2}`},
		},
	}
}
