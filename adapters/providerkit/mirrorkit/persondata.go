package mirrorkit

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hephaestus-dev/hephaestus/adapters/sqlkit"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/domain/provider"
	"github.com/hephaestus-dev/hephaestus/ports"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

var _ contract.PersonDataStore = PersonData{}

// PersonArgs makes a personal-data map's parameters for the person scope names in workspaces;
// it may read the mirror in ptx (ids that logins resolve to).
type PersonArgs func(ctx context.Context, ptx pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error)

// PersonData is a mirror's personal-data map (docs/erasure.md) as person erasure counts and
// erases it, in the erasure pass's transaction: it implements contract.PersonDataStore, and a
// mirror store embeds it.
type PersonData struct {
	provider provider.Provider
	rules    []sqlkit.PersonRule
	args     PersonArgs
	erased   func(ctx context.Context, ptx pgx.Tx, args pgx.NamedArgs) error
}

// NewPersonData makes the personal-data map of p's mirror: its rules, in erasure order, and
// how their parameters are made.
func NewPersonData(p provider.Provider, rules []sqlkit.PersonRule, args PersonArgs) PersonData {
	return PersonData{provider: p, rules: rules, args: args}
}

// AfterErase returns d running fn, with the rules' parameters, after an erasure that changed a
// row (GitHub gives the ghost account its user row).
func (d PersonData) AfterErase(fn func(ctx context.Context, ptx pgx.Tx, args pgx.NamedArgs) error) PersonData {
	d.erased = fn
	return d
}

// Provider implements contract.PersonDataStore.
func (d PersonData) Provider() provider.Provider { return d.provider }

// CountPerson implements contract.PersonDataStore: the rows the rules would delete or rewrite.
func (d PersonData) CountPerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, args, err := d.prepare(ctx, tx, workspaces, scope)
	if err != nil {
		return 0, err
	}
	return sqlkit.CountPerson(ctx, ptx, d.rules, args)
}

// ErasePerson implements contract.PersonDataStore: it deletes or rewrites the rows the rules
// select and returns how many.
func (d PersonData) ErasePerson(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (int64, error) {
	ptx, args, err := d.prepare(ctx, tx, workspaces, scope)
	if err != nil {
		return 0, err
	}
	n, err := sqlkit.ErasePerson(ctx, ptx, d.rules, args)
	if err != nil {
		return 0, fmt.Errorf("erase %s person data: %w", strings.ToLower(d.provider.String()), err)
	}
	if n > 0 && d.erased != nil {
		if err := d.erased(ctx, ptx, args); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (d PersonData) prepare(ctx context.Context, tx ports.Tx, workspaces []int64, scope erasure.Scope) (pgx.Tx, pgx.NamedArgs, error) {
	ptx, err := sqlkit.PgxTx(tx)
	if err != nil {
		return nil, nil, err
	}
	args, err := d.args(ctx, ptx, workspaces, scope)
	return ptx, args, err
}

// IDArgs are the parameters of a map whose rules need sqlkit.PersonIDArgs (@workspaces, @ids
// as text) and, as @<name>, the alternation pattern each of patterns makes of the person's ids
// quoted for a regular expression (a rule-specific shape around "(id|id…)"). With no id a
// pattern matches nothing.
func IDArgs(lower bool, patterns map[string]func(ids string) string) PersonArgs {
	return func(_ context.Context, _ pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error) {
		args := sqlkit.PersonIDArgs(workspaces, scope)
		var alts []string
		for _, id := range args["ids"].([]string) {
			if lower {
				id = strings.ToLower(id)
			}
			alts = append(alts, regexp.QuoteMeta(id))
		}
		for name, pattern := range patterns {
			args[name] = `(?!)`
			if len(alts) > 0 {
				args[name] = pattern(`(` + strings.Join(alts, "|") + `)`)
			}
		}
		return args, nil
	}
}

// AccountArgs are the parameters of a map for a provider whose accounts have numeric ids,
// logins and e-mail addresses: @workspaces, @ids (the numeric ids; another id matches
// nothing), the logins under loginKey and @emails, in lower case (compared
// case-insensitively), then sqlkit.TextArgs. The tombstone account (ghostID, ghostLogin; 0 and
// "" for none) is never the person. resolveIDs, run with these parameters, returns @ids with
// the ids of the mirrored accounts whose login is one of the person's (a login-only request
// still finds the rows that refer by id); names returns the display names the mirror pairs with
// the person, read before the rules clear them. more, when set, adds parameters of its own.
func AccountArgs(name, loginKey string, ghostID int64, ghostLogin, resolveIDs, names string,
	more func(args pgx.NamedArgs, logins []string)) PersonArgs {
	return func(ctx context.Context, ptx pgx.Tx, workspaces []int64, scope erasure.Scope) (pgx.NamedArgs, error) {
		ids, logins, emails := []int64{}, []string{}, []string{}
		for _, i := range scope.Identities() {
			if n, err := strconv.ParseInt(i.ID(), 10, 64); err == nil && n > 0 && n != ghostID {
				ids = append(ids, n)
			}
			if i.Login() != "" && !(ghostLogin != "" && strings.EqualFold(i.Login(), ghostLogin)) {
				logins = append(logins, strings.ToLower(i.Login()))
			}
			if i.Email() != "" {
				emails = append(emails, strings.ToLower(i.Email()))
			}
		}
		if workspaces == nil {
			workspaces = []int64{}
		}
		args := pgx.NamedArgs{"workspaces": workspaces, "ids": ids, loginKey: logins, "emails": emails}
		if err := ptx.QueryRow(ctx, resolveIDs, args).Scan(&ids); err != nil {
			return nil, sqlkit.Interpret("resolve "+name+" person ids", err)
		}
		args["ids"] = ids
		var found []string
		if err := ptx.QueryRow(ctx, names, args).Scan(&found); err != nil {
			return nil, sqlkit.Interpret("read "+name+" person names", err)
		}
		args = sqlkit.TextArgs(args, logins, emails, found)
		if more != nil {
			more(args, logins)
		}
		return args, nil
	}
}
