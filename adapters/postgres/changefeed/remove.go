package changefeed

import (
	"context"
	"errors"
	"regexp"
	"sort"
	"strconv"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ ports.ChangeRemover = (*Store)(nil)

// RemovedData is the data of a change whose resource a teardown removed.
const RemovedData = `{"removed":true}`

// memberName is what a selected data member may look like (it is part of the SQL text).
var memberName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// removeChanges replaces the data of the selected changes. $1 workspace, $2 type prefix, $3 all,
// $4 subjects, $5 subject prefixes, then per data member its values; rows already removed or
// erased are left as they are (no rewrite, no count).
const removeChangesHead = `
UPDATE workspace_change c SET data = '` + RemovedData + `'::jsonb
WHERE c.workspace_id = $1 AND starts_with(c.type, $2)
  AND c.data <> '` + RemovedData + `'::jsonb AND c.data <> '{"erased":true}'::jsonb
  AND ($3 OR c.subject = ANY($4::text[])
       OR EXISTS (SELECT 1 FROM unnest($5::text[]) AS p(x) WHERE starts_with(c.subject, p.x))`

// RemoveChanges implements ports.ChangeRemover. Errors: sqlkit.ErrForeignTx, a data
// member that is not a plain name, an empty type prefix.
func (s *Store) RemoveChanges(ctx context.Context, tx ports.Tx, workspaceID int64, sel ports.ChangeSelection) (int64, error) {
	if sel.TypePrefix == "" {
		return 0, errors.New("change feed: a removal without a type prefix")
	}
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return 0, err
	}
	// Changes this transaction published are removed too: they are written first.
	if err := sqlkit.FlushAtCommit(ctx, tx); err != nil {
		return 0, err
	}
	sql := removeChangesHead
	args := []any{workspaceID, sel.TypePrefix, sel.All, nonNil(sel.Subjects), nonNil(sel.SubjectPrefixes)}
	members := make([]string, 0, len(sel.DataMembers))
	for m := range sel.DataMembers {
		members = append(members, m)
	}
	sort.Strings(members) // one SQL text per selection shape
	for _, member := range members {
		values := sel.DataMembers[member]
		if !memberName.MatchString(member) {
			return 0, errors.New("change feed: a removal by a data member that is not a plain name")
		}
		args = append(args, nonNil(values))
		sql += `
       OR c.data->>'` + member + `' = ANY($` + strconv.Itoa(len(args)) + `::text[])`
	}
	sql += `)`
	tag, err := ptx.Exec(ctx, sql, args...)
	if err != nil {
		return 0, sqlkit.Interpret("remove torn-down changes", err)
	}
	return tag.RowsAffected(), nil
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
