package sqlkit

import (
	"context"

	"github.com/hephaestus-dev/hephaestus/domain/erasure"

	"github.com/jackc/pgx/v5"
)

// PersonRule is one table's part of a provider's personal-data map (docs/erasure.md),
// declared by that provider's mirror store: which rows hold the person (Where) and what person
// erasure does to them: delete them (Set empty) or rewrite them (Set). Where and Set are SQL
// fragments over named parameters that the declaring store passes as pgx.NamedArgs
// (@workspaces, bigint[], always; the others are the store's); a rule need not use them all.
// InstanceWide tables have no workspace_id column.
type PersonRule struct {
	Table        string
	Where        string
	Set          string
	InstanceWide bool
}

func (r PersonRule) filter() string {
	if r.InstanceWide {
		return `(` + r.Where + `)`
	}
	return `workspace_id = ANY(@workspaces) AND (` + r.Where + `)`
}

// CountSQL counts the rows the rule matches.
func (r PersonRule) CountSQL() string {
	return `SELECT count(*) FROM ` + r.Table + ` WHERE ` + r.filter()
}

// EraseSQL deletes or rewrites the rows the rule matches.
func (r PersonRule) EraseSQL() string {
	if r.Set == "" {
		return `DELETE FROM ` + r.Table + ` WHERE ` + r.filter()
	}
	return `UPDATE ` + r.Table + ` SET ` + r.Set + ` WHERE ` + r.filter()
}

// CountPerson sums the rows that rules match, in tx.
func CountPerson(ctx context.Context, tx pgx.Tx, rules []PersonRule, args pgx.NamedArgs) (int64, error) {
	var total int64
	for _, r := range rules {
		var n int64
		if err := tx.QueryRow(ctx, r.CountSQL(), args).Scan(&n); err != nil {
			return 0, Interpret("count person data in "+r.Table, err)
		}
		total += n
	}
	return total, nil
}

// ErasePerson runs rules in their order in tx and sums the rows they deleted or rewrote.
func ErasePerson(ctx context.Context, tx pgx.Tx, rules []PersonRule, args pgx.NamedArgs) (int64, error) {
	var total int64
	for _, r := range rules {
		tag, err := tx.Exec(ctx, r.EraseSQL(), args)
		if err != nil {
			return 0, Interpret("erase person data in "+r.Table, err)
		}
		total += tag.RowsAffected()
	}
	return total, nil
}

// PersonIDArgs are the rule parameters of a provider that names a person by an exact string id
// only (Slack member ids, Outline user ids): @workspaces (bigint[]) and @ids (text[]), never
// NULL, so "= ANY" matches nothing rather than failing.
func PersonIDArgs(workspaces []int64, scope erasure.Scope) pgx.NamedArgs {
	ids := []string{}
	for _, i := range scope.Identities() {
		if i.ID() != "" {
			ids = append(ids, i.ID())
		}
	}
	if workspaces == nil {
		workspaces = []int64{}
	}
	return pgx.NamedArgs{"workspaces": workspaces, "ids": ids}
}
