package outline

import "github.com/hephaestus-dev/hephaestus/ports"

// PersonFields declares where Outline payloads name a person, for person erasure of the inbox
// stores: the envelope's actorId, a model's userId, and user objects ({"id","name",
// "avatarUrl"}: createdBy, updatedBy) and their e-mail addresses. Outline ids are UUIDs,
// matched exactly.
func PersonFields() ports.PersonFields {
	return ports.PersonFields{
		Provider:   Provider,
		UserShape:  []string{"avatarUrl"},
		References: []string{"actorId", "userId"},
		Emails:     []string{"email"},
	}
}
