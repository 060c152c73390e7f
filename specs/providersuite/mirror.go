package providersuite

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/postgres/changefeed"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/erasurestore"
	"github.com/hephaestus-dev/hephaestus/application/consumer"
	"github.com/hephaestus-dev/hephaestus/domain/erasure"
	"github.com/hephaestus-dev/hephaestus/ports/contract"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

// world is what the suite builds once on the package's harness: the provider's handlers on a
// mirror store that publishes to the change feed, and an erasure store that knows the provider.
type world struct {
	registry *consumer.Registry
	erasures *erasurestore.Store
}

func (f Fixture) build() *world {
	ginkgo.GinkgoHelper()
	pool := f.Harness.Pool
	feed, err := changefeed.New(pool, nil)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	w := &world{registry: consumer.NewRegistry()}
	mirror := f.Handlers(pool, f.Harness.Inbox, w.registry, feed)
	fields, err := f.PersonFields()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	cfg := erasurestore.Config{Fields: []contract.PersonFields{fields}, Mirrors: []contract.PersonDataStore{mirror}}
	if f.InstallationNamespace != "" {
		cfg.InstallationNamespaces = map[string]string{f.Webhook.Provider().String(): f.InstallationNamespace}
	}
	w.erasures, err = erasurestore.New(pool, cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return w
}

// mirrored stores f's events for ws as LEASED rows from f's source and handles each as the
// consumer does; it returns the rows.
func (f Fixture) mirrored(ctx context.Context, w *world, ws int64, marker string) []support.Delivery {
	ginkgo.GinkgoHelper()
	var out []support.Delivery
	for _, e := range f.Events(ws, marker) {
		d := support.LeasedEvent(ctx, f.Harness.Pool, ws, f.Webhook.Provider(), e.Type, e.Subject, e.Payload)
		_, err := f.Harness.Pool.Exec(ctx, `UPDATE provider_event SET headers = jsonb_build_object('Hephaestus-Source-Server-Url', $2::text)
			WHERE id = $1`, d.ID, f.Source)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(d.Handle(ctx, w.registry)).To(gomega.Succeed(), "%s %s", e.Type, e.Payload)
		out = append(out, d)
	}
	return out
}

// mirrorTables are the provider's tables (named <Package>_…) that hold rows per workspace.
func (f Fixture) mirrorTables(ctx context.Context) []string {
	ginkgo.GinkgoHelper()
	tables := support.Column(ctx, f.Harness.Pool, `
		SELECT c.relname::text FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'workspace_id' AND NOT a.attisdropped
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND starts_with(c.relname, $1)
		ORDER BY 1`, f.Package+"_")
	gomega.Expect(tables).NotTo(gomega.BeEmpty())
	return tables
}

// rowsOf counts ws's rows in each of tables, naming the tables that hold any.
func rowsOf(ctx context.Context, pool *pgxpool.Pool, ws int64, tables []string) map[string]int {
	ginkgo.GinkgoHelper()
	out := map[string]int{}
	for _, t := range tables {
		if n := support.Count(ctx, pool, `SELECT count(*) FROM `+pgx.Identifier{t}.Sanitize()+` WHERE workspace_id = $1`, ws); n > 0 {
			out[t] = n
		}
	}
	return out
}

// versions is every row of ws in tables by its table and the transaction that last wrote it.
func versions(ctx context.Context, pool *pgxpool.Pool, ws int64, tables []string) []string {
	ginkgo.GinkgoHelper()
	var out []string
	for _, t := range tables {
		out = append(out, support.Column(ctx, pool, `SELECT $2 || ' ' || xmin::text FROM `+pgx.Identifier{t}.Sanitize()+
			` WHERE workspace_id = $1 ORDER BY xmin::text`, ws, t)...)
	}
	return out
}

// ledger is the row's committed steps, each with the transaction and time it committed in.
func ledger(ctx context.Context, pool *pgxpool.Pool, id int64) []string {
	ginkgo.GinkgoHelper()
	return support.Column(ctx, pool, `SELECT step_name || ' ' || xmin::text || ' ' || committed_at::text
		FROM provider_event_step WHERE event_id = $1 ORDER BY step_name`, id)
}

func steps(f Fixture, w func() *world) {
	ginkgo.Describe("named steps", func() {
		ginkgo.It("commits each delivery's writes in named steps, and a retry skips every committed step", func(ctx ginkgo.SpecContext) {
			ws := f.Harness.NewWorkspace(ctx, "acme")
			f.Connect(ctx, f.Harness.Pool, ws)
			rows := f.mirrored(ctx, w(), ws, "marker-acme")
			tables := f.mirrorTables(ctx)
			before := versions(ctx, f.Harness.Pool, ws, tables)
			gomega.Expect(before).NotTo(gomega.BeEmpty(), "the events mirror rows")
			for _, d := range rows {
				names := d.Steps(ctx)
				gomega.Expect(names).NotTo(gomega.BeEmpty(), "%s writes in named steps", d.EventType)
				committed := ledger(ctx, f.Harness.Pool, d.ID)
				d.NextLease(ctx)
				gomega.Expect(d.Handle(ctx, w().registry)).To(gomega.Succeed(), "the retry of %s", d.EventType)
				gomega.Expect(ledger(ctx, f.Harness.Pool, d.ID)).To(gomega.Equal(committed), "the retry of %s committed no step again", d.EventType)
			}
			gomega.Expect(versions(ctx, f.Harness.Pool, ws, tables)).To(gomega.Equal(before), "the retries wrote no mirror row again")
		})
	})
}

func personErasure(f Fixture, w func() *world) {
	ginkgo.Describe("person erasure", func() {
		ginkgo.It("leaves no trace of the person in any mirror table, the inbox or the change feed", func(ctx ginkgo.SpecContext) {
			ws := f.Harness.NewWorkspace(ctx, "acme")
			f.Connect(ctx, f.Harness.Pool, ws)
			f.mirrored(ctx, w(), ws, "marker-acme")
			where := []string{f.Package + "_", "provider_event"}
			gomega.Expect(support.SearchTraces(ctx, f.Harness.Pool, where, f.Person.Traces...)).To(gomega.ContainElement(
				gomega.WithTransform(func(t support.Trace) string { return t.Table }, gomega.HavePrefix(f.Package+"_"))),
				"the search finds the person in the mirror before")
			gomega.Expect(support.Count(ctx, f.Harness.Pool, `SELECT count(*) FROM workspace_change WHERE workspace_id = $1`, ws)).
				To(gomega.BeNumerically(">", 0), "the mirror published its changes")

			id, err := erasure.NewIdentity(f.Person.ID, f.Person.Login, f.Person.Email)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			scope, err := erasure.NewScope(f.Webhook.Provider(), f.Source, []erasure.Identity{id})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			support.EraseNow(ctx, w().erasures, scope)
			gomega.Expect(support.SearchTraces(ctx, f.Harness.Pool, where, f.Person.Traces...)).To(gomega.BeEmpty())
		})
	})
}

func teardown(f Fixture, w func() *world) {
	ginkgo.Describe("connection teardown", func() {
		ginkgo.It("removes the workspace's mirror rows and the data of their changes, and no other workspace's", func(ctx ginkgo.SpecContext) {
			acme := f.Harness.NewWorkspace(ctx, "acme")
			other := f.Harness.NewWorkspace(ctx, "other")
			conn := f.Connect(ctx, f.Harness.Pool, acme)
			f.Connect(ctx, f.Harness.Pool, other)
			f.mirrored(ctx, w(), acme, "marker-acme")
			f.mirrored(ctx, w(), other, "marker-other")
			tables := f.mirrorTables(ctx)
			gomega.Expect(rowsOf(ctx, f.Harness.Pool, acme, tables)).NotTo(gomega.BeEmpty())
			theirs := rowsOf(ctx, f.Harness.Pool, other, tables)
			theirChanges := changes(ctx, f.Harness.Pool, other, f.Package)
			published := changes(ctx, f.Harness.Pool, acme, f.Package)
			gomega.Expect(published).NotTo(gomega.BeEmpty(), "the mirror published its changes")

			f.Teardown(ctx, f.Harness.Pool, acme, conn)
			gomega.Expect(rowsOf(ctx, f.Harness.Pool, acme, tables)).To(gomega.BeEmpty(), "rows left after the teardown")
			// What the teardown publishes (what went) is new; what was published before keeps no data.
			after := changes(ctx, f.Harness.Pool, acme, f.Package)
			for id := range published {
				gomega.Expect(after).To(gomega.HaveKeyWithValue(id, gomega.HaveSuffix(` {"removed": true}`)), "a change of a torn-down row keeps no data")
			}
			gomega.Expect(rowsOf(ctx, f.Harness.Pool, other, tables)).To(gomega.Equal(theirs))
			gomega.Expect(changes(ctx, f.Harness.Pool, other, f.Package)).To(gomega.Equal(theirChanges))
		})
	})
}

// changes is ws's changes of the provider's types ("<p>.…") by id, each as type, subject and data.
func changes(ctx context.Context, pool *pgxpool.Pool, ws int64, p string) map[string]string {
	ginkgo.GinkgoHelper()
	out := map[string]string{}
	for _, row := range support.Column(ctx, pool, `SELECT id::text || ' ' || type || ' ' || subject || ' ' || data::text
		FROM workspace_change WHERE workspace_id = $1 AND starts_with(type, $2)`, ws, p+".") {
		id, c, _ := strings.Cut(row, " ")
		out[id] = c
	}
	return out
}

func readAPI(f Fixture, w func() *world) {
	ginkgo.Describe("read API", func() {
		var acmePaths, otherPaths []string
		var member, outsider, stranger string

		ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
			acme := f.Harness.NewWorkspace(ctx, "acme")
			other := f.Harness.NewWorkspace(ctx, "other")
			f.Connect(ctx, f.Harness.Pool, acme)
			f.Connect(ctx, f.Harness.Pool, other)
			f.mirrored(ctx, w(), acme, "marker-acme")
			f.mirrored(ctx, w(), other, "marker-other")
			member = f.Harness.NewAccount(ctx, "mia", "acme", "MEMBER")
			outsider = f.Harness.NewAccount(ctx, "oscar", "other", "ADMIN")
			stranger = f.Harness.NewAccount(ctx, "sam", "", "")
			acmePaths, otherPaths = f.ReadPaths("acme"), f.ReadPaths("other")
			gomega.Expect(acmePaths).NotTo(gomega.BeEmpty())
		})

		ginkgo.It("answers 401 without a token, and 403 to another workspace's admin and to an account of no workspace, with an error code", func() {
			for _, p := range acmePaths {
				r := f.Harness.Get(p, "")
				gomega.Expect(r.Status).To(gomega.Equal(401), p)
				gomega.Expect(r.JSON).To(gomega.HaveKey("error"), p)
				for _, token := range []string{outsider, stranger} {
					r = f.Harness.Get(p, token)
					gomega.Expect(r.Status).To(gomega.Equal(403), p)
					gomega.Expect(r.JSON).To(gomega.HaveKey("error"), p)
				}
			}
		})

		ginkgo.It("answers 404 for a workspace that does not exist, to a member and to the instance administrator", func() {
			for _, p := range f.ReadPaths("nope") {
				gomega.Expect(f.Harness.Get(p, member).Status).To(gomega.Equal(404), p)
				gomega.Expect(f.Harness.Get(p, support.AdminToken).Status).To(gomega.Equal(404), p)
			}
		})

		ginkgo.It("shows a member their workspace's rows and never another workspace's", func() {
			shown := false
			for _, p := range acmePaths {
				r := f.Harness.Get(p, member)
				gomega.Expect(r.Status).To(gomega.Equal(200), p)
				gomega.Expect(body(r)).NotTo(gomega.ContainSubstring("marker-other"), p)
				shown = shown || strings.Contains(body(r), "marker-acme")
			}
			gomega.Expect(shown).To(gomega.BeTrue(), "the lists show what the events mirrored")
			// Another workspace's resources named under the member's workspace are not found
			// there, or found as the member's workspace's own.
			for _, p := range otherPaths {
				p = strings.Replace(p, "/other/", "/acme/", 1)
				r := f.Harness.Get(p, member)
				gomega.Expect(r.Status).To(gomega.BeElementOf(200, 404), p)
				gomega.Expect(body(r)).NotTo(gomega.ContainSubstring("marker-other"), p)
			}
			for _, p := range otherPaths {
				gomega.Expect(body(f.Harness.Get(p, support.AdminToken))).NotTo(gomega.ContainSubstring("marker-acme"), p)
			}
		})
	})
}

// body is an answer's JSON as text.
func body(r support.Response) string {
	ginkgo.GinkgoHelper()
	raw, err := json.Marshal(r.JSON)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return string(raw)
}
