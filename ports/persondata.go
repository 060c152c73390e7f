package ports

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
)

// PersonDataStore is a provider's mirror store as person erasure runs it (the ordinary source
// erasure, before the inbox stores). Each provider's mirror store declares here which of its
// rows and columns are person data and what erasure does to them (the personal-data map of
// ARCHITECTURE.md); bootstrap collects the stores, so no central list names a provider's
// tables. Both methods run inside the erasure pass's transaction tx (which holds the copy
// fence, so no fenced mirror write commits meanwhile) and see only the mirror of workspaces,
// the workspaces that have a connection of the store's provider in the request's namespace.
type PersonDataStore interface {
	// Provider is the provider whose erasure requests run this store.
	Provider() provider.Provider

	// CountPerson counts the rows that hold the person now (rows ErasePerson would delete or
	// rewrite), deleting nothing. Errors: context errors, *inbox.TransientError, others.
	CountPerson(ctx context.Context, tx Tx, workspaces []int64, person erasure.Scope) (int64, error)

	// ErasePerson deletes the person's own rows and what they wrote alone, and replaces every
	// reference to the person in shared rows by the provider's tombstone, returning how many
	// rows it deleted or rewrote. Repeating it finds nothing more (a repeated pass counts 0
	// unless new rows arrived). Errors: as CountPerson.
	ErasePerson(ctx context.Context, tx Tx, workspaces []int64, person erasure.Scope) (int64, error)
}

// PersonFields declares where a provider's webhook payloads name a person, so the inbox
// stores (which keep the payloads) match the person by the provider's own rules. Each provider
// module declares its fields; member names are plain JSON object keys.
type PersonFields struct {
	Provider provider.Provider
	// Logins are the members holding a login or user name, compared case-insensitively
	// (GitHub "login", GitLab "username").
	Logins []string
	// UserShape are the members that make an object a user object: its "id" then names the
	// person (a repository with the person's numeric id does not).
	UserShape []string
	// References are the members that hold a person's id wherever they appear (Slack "user",
	// GitLab "author_id", Outline "actorId"); compared exactly, as text or as a number.
	References []string
	// Emails are the members holding an e-mail address, compared case-insensitively.
	Emails []string
}
