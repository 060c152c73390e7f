package outlinemirror

import (
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
)

// outlinePersonData is the Outline mirror's personal-data map. Documents and collections are
// shared items and the mirror keeps no author of them; the event record names who acted, a
// reference that erasure removes (NULL) while the record, its time and model stay.
// Parameters: @workspaces (bigint[]), @ids the person's Outline user ids (text[], exact).
var outlinePersonData = []sqlkit.PersonRule{
	{Table: "outline_event", Where: `actor_id = ANY(@ids)`, Set: `actor_id = NULL`},
	// A mention of the person in a document ("@[Name](mention://<id>/user/<user id>)", the
	// markdown Outline writes) becomes a mention of TombstoneUser without the name; any other
	// occurrence of their id in the text becomes TombstoneUser too.
	{Table: "outline_document", Where: `text ~* @mention_re OR text ~* @id_re`,
		Set: `text = regexp_replace(regexp_replace(text, @mention_re, '@[` + TombstoneName + `](mention://\1/user/` + TombstoneUser + `)', 'gi'), @id_re, '\1` + TombstoneUser + `', 'gi')`},
}

// TombstoneUser and TombstoneName replace the person's user id and name in document text: the
// nil UUID is no Outline user.
const (
	TombstoneUser = "00000000-0000-0000-0000-000000000000"
	TombstoneName = "erased"
)

// personArgs are PersonIDArgs and the patterns of the person's mentions (@mention_re) and ids
// (@id_re) in document text.
var personArgs = mirrorkit.IDArgs(true, map[string]func(string) string{
	"mention_re": func(ids string) string { return `@\[[^]]*\]\(mention://([^)/]*)/user/` + ids + `\)` },
	"id_re":      func(ids string) string { return `(^|[^a-z0-9-])` + ids + `(?![a-z0-9-])` },
})
