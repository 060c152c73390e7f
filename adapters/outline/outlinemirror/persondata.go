package outlinemirror

import (
	"context"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/outline"
	"github.com/hephaestus-dev/hephaestus/adapters/providerkit/mirrorkit"
	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.PersonDataStore = (*Store)(nil)

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
func personArgs(_ context.Context, _ pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error) {
	args := sqlkit.PersonIDArgs(workspaces, scope)
	var alts []string
	for _, id := range args["ids"].([]string) {
		alts = append(alts, regexp.QuoteMeta(strings.ToLower(id)))
	}
	args["mention_re"], args["id_re"] = `(?!)`, `(?!)`
	if len(alts) > 0 {
		ids := `(` + strings.Join(alts, "|") + `)`
		args["mention_re"] = `@\[[^]]*\]\(mention://([^)/]*)/user/` + ids + `\)`
		args["id_re"] = `(^|[^a-z0-9-])` + ids + `(?![a-z0-9-])`
	}
	return args, nil
}

// Provider implements ports.PersonDataStore.
func (s *Store) Provider() provider.Provider { return outline.Provider }

// outlinePersonErasure counts and erases outlinePersonData.
var outlinePersonErasure = mirrorkit.PersonData{Name: "outline", Rules: outlinePersonData, Args: personArgs}

// CountPerson implements ports.PersonDataStore.
func (s *Store) CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	return outlinePersonErasure.Count(ctx, tx, workspaces, scope)
}

// ErasePerson implements ports.PersonDataStore.
func (s *Store) ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	return outlinePersonErasure.Erase(ctx, tx, workspaces, scope)
}
