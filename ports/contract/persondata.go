package contract

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// PersonDataStore is a provider's mirror store as person erasure runs it (the ordinary source
// erasure, before the inbox stores). Each provider's mirror store declares here which of its
// rows and columns are person data and what erasure does to them (the personal-data map of
// docs/erasure.md); bootstrap collects the stores, so no central list names a provider's
// tables. Both methods run inside the erasure pass's transaction tx (which holds the copy
// fence, so no fenced mirror write commits meanwhile) and see only the mirror of workspaces,
// the workspaces that have a connection of the store's provider in the request's namespace.
type PersonDataStore interface {
	// Provider is the provider whose erasure requests run this store.
	Provider() provider.Provider

	// CountPerson counts the rows that hold the person now (rows ErasePerson would delete or
	// rewrite), deleting nothing. Errors: context errors, *inbox.TransientError, others.
	CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, person erasure.Scope) (int64, error)

	// ErasePerson deletes the person's own rows and what they wrote alone, and replaces every
	// reference to the person in shared rows by the provider's tombstone, returning how many
	// rows it deleted or rewrote. Repeating it finds nothing more (a repeated pass counts 0
	// unless new rows arrived). Errors: as CountPerson.
	ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, person erasure.Scope) (int64, error)
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
	// Text are the rewrites of the free text the provider structures around a person
	// (mentions, resources named by a login) that person erasure applies to the stored
	// payloads of other people's deliveries, which it keeps.
	Text []TextRewrite
	// Views are the members of the provider's read API and change-feed views that name a
	// person, derived from the view types (readkit.PersonViewsOf); the change feed's erasure matches
	// by them. Required (nil is refused): a provider with views declares them, also when none
	// of their members names a person.
	Views *PersonViews
}

// TextRewrite is one rewrite of the decoded strings of a payload (every string value and every
// object key, never the JSON text): every match of Pattern (Go regexp syntax, matched as
// written: [A-Za-z] for a letter of either case) becomes Replacement (regexp.Expand syntax: ${1}…). In Pattern, {logins}
// stands for the person's logins, {emails} for their e-mail addresses and {ids} for their ids,
// each as an alternation of the literal values that ignores the case of ASCII letters only; a
// pattern names at least one of them (the store finds candidate rows by these values), and a
// rewrite whose placeholder has no value is skipped. A line break is the newline character
// of the decoded string, never the two characters of its JSON escape. The rewrites of a declaration are applied in order, again until the string no
// longer changes (so a match that overlaps the context of the previous one is found too).
type TextRewrite struct {
	Pattern     string
	Replacement string
}

// ErasedEmail is the address a rewrite puts where a person's e-mail address was in someone
// else's text: the reserved .invalid domain, so it is nobody's.
const ErasedEmail = "erased@erased.invalid"

// PersonViews declares where a provider's read API and change-feed views name a person: the
// JSON members of the view types whose fields carry a `person` struct tag (readkit.PersonViewsOf). The
// change feed's erasure matches a change's data by them, so a view cannot publish a field
// naming a person that the provider's erasure does not cover.
type PersonViews struct {
	// IDs are members holding a person's provider id (compared exactly, as text or number).
	IDs []string
	// Logins are members holding a login or user name (compared case-insensitively).
	Logins []string
	// Emails are members holding an e-mail address (compared case-insensitively).
	Emails []string
	// Names are members holding a person's display name (compared with the names the
	// provider's payloads pair with the person's e-mail or id).
	Names []string
}

// IsZero reports whether the declaration names no member.
func (v PersonViews) IsZero() bool {
	return len(v.IDs) == 0 && len(v.Logins) == 0 && len(v.Emails) == 0 && len(v.Names) == 0
}

// PersonTag is the struct tag a view field naming a person carries: `person:"id"`,
// `person:"login"`, `person:"email"`, `person:"name"`, or `person:"-"` for a field whose name
// sounds like a person's but is not one (authoredAt).
const PersonTag = "person"
