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
	"github.com/hephaestus-dev/hephaestus/ports"
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
	var fields []ports.PersonFields
	for _, declared := range []func() (ports.PersonFields, error){githubread.PersonFields, gitlabread.PersonFields, slackread.PersonFields, outlineread.PersonFields} {
		f, err := declared()
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		fields = append(fields, f)
	}
	s, err := erasurestore.New(pool, erasurestore.Config{
		Fields:                 fields,
		Mirrors:                []ports.PersonDataStore{gh, gl, sl, ol},
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
	var out []erasure.Receipt
	held, err := s.Hold(ctx, func(ctx context.Context, r erasure.Request, receipts []erasure.Receipt) (erasure.State, error) {
		gomega.Expect(r.ID()).To(gomega.Equal(req.ID()), "no other request is running")
		for {
			store, pass, ok := r.Next(s.Mirrors(r.Scope().Provider()), receipts)
			if !ok {
				out = receipts
				return erasure.Done, nil
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

// notPersonColumns hold inbox, workspace or connection ids, never a person's.
var notPersonColumns = []string{"workspace_id", "source_event_id", "refreshed_by_event", "monitor_event_id",
	"readiness_event_id", "connection_id", "event_id", "erasure_id"}

// SearchTraces looks for each of values in every text, jsonb and array column of every table
// whose name starts with one of prefixes (found through information_schema, so a table or
// column added later is searched too), compared case-insensitively as substrings; a value that
// is an integer is also looked for in every bigint column (but the id columns above). The change
// feed (workspace_change, whose data is the read API's view of mirrored entities) is always
// searched, by its text and jsonb columns (its bigint columns are the feed's and workspace ids).
func SearchTraces(ctx context.Context, pool *pgxpool.Pool, prefixes []string, values ...string) []Trace {
	ginkgo.GinkgoHelper()
	prefixes = append(slices.Clone(prefixes), "workspace_change")
	type column struct{ table, name, kind string }
	rows, err := pool.Query(ctx, `
		SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type IN ('text', 'jsonb', 'ARRAY', 'bigint', 'character varying')
		ORDER BY table_name, ordinal_position`)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.table, &c.name, &c.kind)
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var hits []Trace
	for _, c := range cols {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(c.table, p) }) {
			continue
		}
		col, table := pgx.Identifier{c.name}.Sanitize(), pgx.Identifier{c.table}.Sanitize()
		for _, v := range values {
			sql := `SELECT count(*) FROM ` + table + ` WHERE strpos(lower(` + col + `::text), lower($1)) > 0`
			if c.kind == "bigint" {
				if strings.HasPrefix(c.table, "workspace_change") {
					continue
				}
				if _, err := strconv.ParseInt(v, 10, 64); err != nil || slices.Contains(notPersonColumns, c.name) {
					continue
				}
				sql = `SELECT count(*) FROM ` + table + ` WHERE ` + col + ` = $1::bigint`
			}
			if Count(ctx, pool, sql, v) > 0 {
				hits = append(hits, Trace{c.table, c.name, v})
			}
		}
	}
	return hits
}
