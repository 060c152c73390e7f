package mirrorkit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports"
)

// PersonData is a mirror's personal-data map (docs/erasure.md) as its store's
// ports.PersonDataStore counts and erases it, in the erasure pass's transaction.
type PersonData struct {
	// Name is the provider's in errors ("github").
	Name string
	// Rules are the tables and what erasure does to them, in erasure order.
	Rules []sqlkit.PersonRule
	// Args makes the rules' parameters for the person scope names in workspaces; it may read
	// the mirror in ptx (ids that logins resolve to).
	Args func(ctx context.Context, ptx pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error)
	// Erased, when set, runs after an erasure that changed a row, with the rules' parameters.
	Erased func(ctx context.Context, ptx pgx.Tx, args pgx.NamedArgs) error
}

// Count counts the rows the rules would delete or rewrite.
func (d PersonData) Count(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, args, err := d.args(ctx, tx, workspaces, scope)
	if err != nil {
		return 0, err
	}
	return sqlkit.CountPerson(ctx, ptx, d.Rules, args)
}

// Erase deletes or rewrites the rows the rules select and returns how many.
func (d PersonData) Erase(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, args, err := d.args(ctx, tx, workspaces, scope)
	if err != nil {
		return 0, err
	}
	n, err := sqlkit.ErasePerson(ctx, ptx, d.Rules, args)
	if err != nil {
		return 0, fmt.Errorf("erase %s person data: %w", d.Name, err)
	}
	if n > 0 && d.Erased != nil {
		if err := d.Erased(ctx, ptx, args); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (d PersonData) args(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (pgx.Tx, pgx.NamedArgs, error) {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return nil, nil, err
	}
	args, err := d.Args(ctx, ptx, workspaces, scope)
	return ptx, args, err
}

// PersonIDArgs is an Args for a mirror whose rules need only sqlkit.PersonIDArgs, plus what
// more adds to them.
func PersonIDArgs(more func(pgx.NamedArgs)) func(context.Context, pgx.Tx, []int64, erasure.Scope) (pgx.NamedArgs, error) {
	return func(_ context.Context, _ pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error) {
		args := sqlkit.PersonIDArgs(workspaces, scope)
		if more != nil {
			more(args)
		}
		return args, nil
	}
}
