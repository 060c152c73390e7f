package support

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubread"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/gitlab/gitlabread"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlinemirror"
	"github.com/hephaestus-dev/hephaestus/adapters/outline/outlineread"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackmirror"
	"github.com/hephaestus-dev/hephaestus/adapters/slack/slackread"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
)

// ErasureStore is the person-erasure store on pool as bootstrap composes it: every provider's
// person fields and mirror store, and GitHub's installation namespace https://github.com.
func ErasureStore(pool *pgxpool.Pool) *erasurestore.Store {
	gh, err := githubmirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gl, err := gitlabmirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	sl, err := slackmirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ol, err := outlinemirror.New(pool)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var fields []contract.PersonFields
	for _, declared := range []func() (contract.PersonFields, error){githubread.PersonFields, gitlabread.PersonFields, slackread.PersonFields, outlineread.PersonFields} {
		f, err := declared()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		fields = append(fields, f)
	}
	s, err := erasurestore.New(pool, erasurestore.Config{
		Fields:                 fields,
		Mirrors:                []contract.PersonDataStore{gh, gl, sl, ol},
		InstallationNamespaces: map[string]string{github.Provider.String(): "https://github.com"},
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// EraseNow starts a request for scope and works it to its end on the calling goroutine, as the
// runner does: every pass over the provider's mirror stores, then both inbox stores. It
// returns the receipts.
func EraseNow(ctx context.Context, s *erasurestore.Store, scope erasure.Scope) []erasure.Receipt {
	ginkgo.GinkgoHelper()
	req, err := s.Start(ctx, scope, 0)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return EraseRunning(ctx, s, req.ID())
}

// EraseRunning holds the RUNNING request id (started or resumed, and no runner holding it) and
// works the passes it still lacks to its end, then settles it, as the runner does (DONE, or one
// more pass for later while the last pass left rows it could not rewrite). It returns all its
// receipts.
func EraseRunning(ctx context.Context, s *erasurestore.Store, id int64) []erasure.Receipt {
	ginkgo.GinkgoHelper()
	var out []erasure.Receipt
	held, err := s.Hold(ctx, func(ctx context.Context, r erasure.Request, receipts []erasure.Receipt) (erasure.Request, error) {
		gomega.Expect(r.ID()).To(gomega.Equal(id), "no other request is running")
		for {
			store, pass, ok := r.Next(s.Mirrors(r.Scope().Provider()), receipts)
			if !ok {
				out = receipts
				return r.Settle(receipts), nil
			}
			rc, err := s.Pass(ctx, r.ID(), store, pass)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			receipts = append(receipts, rc)
		}
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(held).To(gomega.BeTrue())
	return out
}

// Trace is one place a search found a trace of a person.
type Trace struct{ Table, Column, Value string }

// notPersonColumns hold inbox, workspace or connection ids, never a person's (SearchTraces
// leaves them out of its bigint search; SearchEverywhere searches them too).
var notPersonColumns = []string{"workspace_id", "source_event_id", "refreshed_by_event", "monitor_event_id",
	"readiness_event_id", "connection_id", "event_id", "erasure_id"}

// searchedColumn is one column a search reads: its table, name and kind (text: compared as a
// case-insensitive substring of its text form, jsonb, json and arrays included; number:
// compared with an integer value exactly).
type searchedColumn struct{ table, name, kind string }

// ownedColumns lists, from pg_catalog at run time, every column of every table of the
// service's schema (so a table or column a later migration adds is searched too) whose type
// can hold a trace of a person: text of any kind, json, jsonb, arrays, and numbers. The goose
// version table is the migrator's, not the service's.
func ownedColumns(ctx context.Context, pool *pgxpool.Pool) []searchedColumn {
	ginkgo.GinkgoHelper()
	rows, err := pool.Query(ctx, `
		SELECT c.relname::text, a.attname::text,
		       CASE WHEN t.typcategory IN ('N') THEN 'number' ELSE 'text' END
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		JOIN pg_type t ON t.oid = a.atttypid
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
		  AND c.relname <> 'goose_db_version'
		  AND (t.typcategory IN ('S', 'A', 'N') OR t.typname IN ('json', 'jsonb'))
		ORDER BY c.relname, a.attnum`)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (searchedColumn, error) {
		var c searchedColumn
		return c, r.Scan(&c.table, &c.name, &c.kind)
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(cols).NotTo(gomega.BeEmpty())
	return cols
}

// search looks for each of values in cols: text columns by a case-insensitive substring of
// their text form, number columns by an integer value.
func search(ctx context.Context, pool *pgxpool.Pool, cols []searchedColumn, values []string) []Trace {
	ginkgo.GinkgoHelper()
	var hits []Trace
	for _, c := range cols {
		col, table := pgx.Identifier{c.name}.Sanitize(), pgx.Identifier{c.table}.Sanitize()
		for _, v := range values {
			sql := `SELECT count(*) FROM ` + table + ` WHERE strpos(lower(` + col + `::text), lower($1)) > 0`
			if c.kind == "number" {
				if _, err := strconv.ParseInt(v, 10, 64); err != nil {
					continue
				}
				sql = `SELECT count(*) FROM ` + table + ` WHERE ` + col + ` = $1::numeric`
			}
			if Count(ctx, pool, sql, v) > 0 {
				hits = append(hits, Trace{c.table, c.name, v})
			}
		}
	}
	return hits
}

// SearchEverywhere looks for each of values (a person's id, login, name, e-mail address) in
// every text, json, jsonb, array and number column of every table the service owns (mirror
// tables, provider_event, workspace_change, sync jobs, requests, accounts, everything),
// enumerated from pg_catalog when it runs: texts as case-insensitive substrings, an integer
// value also in every number column.
func SearchEverywhere(ctx context.Context, pool *pgxpool.Pool, values ...string) []Trace {
	ginkgo.GinkgoHelper()
	return search(ctx, pool, ownedColumns(ctx, pool), values)
}

// SearchTraces is SearchEverywhere narrowed to the tables whose name starts with one of
// prefixes, and the change feed (workspace_change) always; a number column there is searched
// but for the id columns above, and the feed's numbers (its own and workspace ids) are not.
func SearchTraces(ctx context.Context, pool *pgxpool.Pool, prefixes []string, values ...string) []Trace {
	ginkgo.GinkgoHelper()
	prefixes = append(slices.Clone(prefixes), "workspace_change")
	var cols []searchedColumn
	for _, c := range ownedColumns(ctx, pool) {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(c.table, p) }) {
			continue
		}
		if c.kind == "number" && (strings.HasPrefix(c.table, "workspace_change") || slices.Contains(notPersonColumns, c.name)) {
			continue
		}
		cols = append(cols, c)
	}
	return search(ctx, pool, cols, values)
}
